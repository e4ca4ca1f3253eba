"""The explorer's errors. Each is one line, like the CLI's: the API puts it in a problem+json `detail`, a
page shows it in place of the view, `kraftlake ui` prints it and exits 2."""

from __future__ import annotations


class ExplorerError(Exception):
    """A request or a start-up the explorer refuses; `status` is the HTTP status it answers with."""

    status = 400
    title = "Bad request"


class BadRequest(ExplorerError):
    """A moment that is neither an offset nor a time (`at=yesterday`), a window whose end precedes its start,
    a sort column or filter the view does not have, a page out of bounds."""


class NotFound(ExplorerError):
    """A cluster, table or topic the explorer does not have."""

    status = 404
    title = "Not found"


class NoHistory(ExplorerError):
    """A fleet's cluster whose warehouse holds no published image yet (or does not exist yet): its pages say
    so, its API routes refuse with 404."""

    status = 404
    title = "No history yet"


class UnsafeBind(ExplorerError):
    """Serving beyond loopback without an access token, or on a port that is taken: refused before the server
    starts."""
