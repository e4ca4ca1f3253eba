"""delta-rs's object-store errors, told in one line."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def describe_store_error(error: OSError) -> str:
    """delta-rs's nested error in one line: each cause, outermost first, colour codes and XML bodies dropped."""
    causes = [_ANSI.sub("", line).strip(" ↳\t") for line in str(error).splitlines()]
    return "; ".join(cause for cause in causes if cause and not cause.startswith("<"))[:600]
