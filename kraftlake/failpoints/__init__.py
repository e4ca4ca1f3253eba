"""Named crash points for recovery tests and the demo: `failpoint(name)` SIGKILLs its own process when armed,
so a test can stop a real process at an exact step and then prove that a restart repairs everything.

Two ways to arm one, both read from the environment of the process:
- `KRAFTLAKE_FAILPOINT=name:n`: the n-th pass through `failpoint(name)` kills the process;
- `KRAFTLAKE_FAILPOINT_FILE=path`: every pass kills the process while the file holds `name` (a test or the
  demo arms and disarms running processes by writing the file).
Unarmed (always, outside tests), a failpoint costs a string comparison.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

_NAME, _, _COUNT = os.environ.get("KRAFTLAKE_FAILPOINT", "").partition(":")
_ARM_FILE = os.environ.get("KRAFTLAKE_FAILPOINT_FILE")
_passes: dict[str, int] = {}


def armed(name: str) -> bool:
    """Whether `failpoint(name)` may kill this process (lets a caller set the scene before it does)."""
    return name == _NAME or _armed_by_file(name)


def _armed_by_file(name: str) -> bool:
    if not _ARM_FILE:
        return False
    try:
        return Path(_ARM_FILE).read_text().strip() == name
    except OSError:
        return False


def failpoint(name: str) -> None:
    if name == _NAME:
        _passes[name] = _passes.get(name, 0) + 1
        if _passes[name] >= int(_COUNT or 1):
            os.kill(os.getpid(), signal.SIGKILL)
    elif _armed_by_file(name):
        os.kill(os.getpid(), signal.SIGKILL)
