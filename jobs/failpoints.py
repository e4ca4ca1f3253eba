"""Named crash points for recovery tests: `KRAFTLAKE_FAILPOINT=name:n` makes the n-th pass through
`failpoint(name)` SIGKILL its own process, so a test can stop a real job at an exact step and then prove
that a rerun repairs it. Unset (always, outside tests), a failpoint is one dictionary lookup."""

from __future__ import annotations

import os
import signal

_ARMED = os.environ.get("KRAFTLAKE_FAILPOINT", "")
_NAME, _, _COUNT = _ARMED.partition(":")
_passes: dict[str, int] = {}


def failpoint(name: str) -> None:
    if name != _NAME:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] >= int(_COUNT or 1):
        os.kill(os.getpid(), signal.SIGKILL)
