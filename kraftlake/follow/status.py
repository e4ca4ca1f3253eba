"""The status file a running follower rewrites with every position line, and `kraftlake follow --status`'s
reading of it: another process (an operator, a monitoring check) sees where the follower stands without
attaching to it. Written whole (a temporary file renamed over it), so a reader never sees half of one."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

STALE_AFTER = 3  # position lines missed before the status is reported as stale (the follower may be gone)


class StatusError(Exception):
    """No status to show: the message names the file."""


@dataclass(frozen=True)
class Status:
    line: str  # the position line as logged: offset, high watermark, lag, leader
    published_offset: int  # the topic holds the log up to here
    high_watermark: int
    written_at: float  # seconds since the epoch
    interval_s: float
    pid: int

    def describe(self, now: float) -> str:
        age = now - self.written_at
        stale = f" (STALE: no update for {age:.0f} s; is pid {self.pid} running?)" if age > STALE_AFTER * max(
            self.interval_s, 1.0) else ""
        return f"{self.line}; published up to offset {self.published_offset}; {age:.0f} s ago by pid {self.pid}{stale}"


def write_status(path: Path, line: str, published_offset: int, high_watermark: int, interval_s: float) -> None:
    status = Status(line, published_offset, high_watermark, time.time(), interval_s, os.getpid())
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(status.__dict__) + "\n")
    temporary.replace(path)


def read_status(path: Path) -> Status:
    try:
        fields = json.loads(path.read_text())
        return Status(**fields)
    except FileNotFoundError:
        raise StatusError(f"{path}: no status file (is a follower running with --status-file {path}?)") from None
    except (OSError, ValueError, TypeError) as error:
        raise StatusError(f"{path}: not a follower's status file: {error}") from None
