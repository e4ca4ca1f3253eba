"""The history explorer (`kraftlake ui`): a read-only web app and HTTP API over `WarehouseReader`.

Layers, bottom up: `moments` (an offset or a time, as every command takes it), `timeline` (the whole
history's series from the `_history` tables, in Arrow), `service` (the reads, paged and cached), `clusters`
(which clusters are served: one warehouse, or a fleet file's, re-read when it changes), `schemas` (the API's
JSON shapes), `app` (routes, pages, errors as problem+json), `server` (binding and its rules). It uses
`kraftlake.lake`, `kraftlake.image_schema` and the fleet file's definition in `kraftlake.settings` only; the
CLI starts it and nothing imports the CLI.
"""
