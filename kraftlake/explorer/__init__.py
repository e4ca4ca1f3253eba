"""The history explorer (`kraftlake ui`): a read-only web app and HTTP API over `WarehouseReader`.

Layers, bottom up: `moments` (an offset or a time, as every command takes it), `timeline` (the whole
history's series from the `_history` tables, in Arrow), `service` (the reads, paged and cached), `schemas`
(the API's JSON shapes), `app` (routes, pages, errors as problem+json), `server` (binding and its rules).
It uses `kraftlake.lake` and `kraftlake.image_schema` only; the CLI starts it and nothing imports the CLI.
"""
