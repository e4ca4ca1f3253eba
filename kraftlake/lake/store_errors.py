"""delta-rs's object-store errors, told in one line naming the warehouse: the CLI's, `ingest`'s and the
streaming job's alike."""

from __future__ import annotations

import errno
import re

from deltalake.exceptions import DeltaError

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# delta-rs reports a local file system's refusal (a full disk, a read-only mount) as a DeltaError naming the
# OS error; an object store's as an OSError
_NO_SPACE = re.compile(r"No space left on device|\(os error 28\)")
_STORE_CAUSE = re.compile(r"\(os error \d+\)|Object Store error|Generic \w*FileSystem error")


def is_store_error(error: Exception) -> bool:
    """Whether `error` is the store refusing or failing a read or write (not a bug, not bad input)."""
    return isinstance(error, OSError) or (isinstance(error, DeltaError) and bool(_STORE_CAUSE.search(str(error))))


def describe_store_error(error: Exception) -> str:
    """delta-rs's nested error in one line: each cause, outermost first, colour codes and XML bodies dropped."""
    causes = [_ANSI.sub("", line).strip(" ↳\t") for line in str(error).splitlines()]
    return "; ".join(cause for cause in causes if cause and not cause.startswith("<"))[:600]


def store_failure(uri: str, error: Exception) -> str | None:
    """The one line for a store's refusal or failure under warehouse `uri` (None: `error` is something else).
    A full disk is said as such: delta-rs reports it as a Parquet read ("Failed to parse parquet: … No space
    left on device") of the file it could not write."""
    if not is_store_error(error):
        return None
    if _NO_SPACE.search(str(error)) or (isinstance(error, OSError) and error.errno == errno.ENOSPC):
        return f"no space left on device writing warehouse {uri}"
    return f"warehouse {uri}: {describe_store_error(error)}"
