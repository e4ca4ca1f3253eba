"""The status file a running follower rewrites, `kraftlake follow --status`'s reading of it, and the STALLED rule
both apply: another process (an operator, a monitoring check) sees where the follower stands without attaching
to it, and a follower that silently stopped is named as such. Written whole (a temporary file renamed over it),
so a reader never sees half of one.

STALLED (`stall_reason`): the source has not answered with the log for longer than the threshold (no Fetch
answered by the leader, no look at the directory: the follower cannot know it is current, and a KRaft leader
commits a NoOp every 500 ms, so a healthy quorum always has news), or the follower's offset has not moved for
that long while the high watermark is ahead of it. The reader judges with its own clock, so a follower that hangs
or died, and stopped writing the file, is STALLED too."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from kraftlake.replay.visibility import Gap


class StatusError(Exception):
    """No status to show: the message names the file."""


class Progress(Protocol):
    """What the stall rule looks at: a source's position (`Observer`'s, `DirectoryTail`'s) or a status."""

    @property
    def next_offset(self) -> int: ...  # the first offset not handed on

    @property
    def high_watermark(self) -> int: ...  # the first offset not committed (-1: not known yet)

    @property
    def advanced_at(self) -> float: ...  # when `next_offset` last moved (or following started), epoch seconds

    @property
    def answered_at(self) -> float: ...  # when the source last answered with the log, epoch seconds


def stall_reason(progress: Progress, stall_after_s: float, now: float) -> str | None:
    """Why following is STALLED at `now`, or None while it is not."""
    quiet = now - progress.answered_at
    if quiet > stall_after_s:
        return f"no answer with the log for {quiet:.0f} s"
    still = now - progress.advanced_at
    if progress.high_watermark > progress.next_offset and still > stall_after_s:
        return (f"offset {progress.next_offset} has not moved for {still:.0f} s while the high watermark is "
                f"{progress.high_watermark}")
    return None


def following_again(stalled_s: float, where: str) -> str:
    """The line once a follower that was STALLED has its answers back (the one definition of the phrase: the
    observer logs it after its STALLED line, docs/operating.md lists it)."""
    return f"following again after {stalled_s:.0f} s STALLED: {where}"


def offsets_behind(progress: Progress) -> int | None:
    """The lag in offsets: how far the high watermark is ahead of the next offset (None: not known yet)."""
    return max(0, progress.high_watermark - progress.next_offset) if progress.high_watermark >= 0 else None


@dataclass(frozen=True)
class Status:
    line: str  # the position line as logged: offset, high watermark, lag, leader
    published_offset: int  # the topic holds the log up to here
    next_offset: int
    high_watermark: int
    advanced_at: float
    answered_at: float
    stall_after_s: float
    written_at: float  # epoch seconds
    pid: int
    gaps: tuple[Gap, ...] = ()
    failed: str = ""  # a fleet's follower that stopped with an error: its one line, until it follows again
    reconnects: int = 0  # connections to a controller opened after the first (leader changes, outages, stalls)
    copied_batches: int = 0  # messages published: one per batch, a snapshot's batches included
    copied_bytes: int = 0  # their values' bytes
    last_batch_time: float = -1.0  # the newest copied batch's append time (max timestamp), epoch seconds

    def lag_seconds(self, now: float) -> float | None:
        """How old the newest copied batch is, as Kafka's loader's `last-applied-record-lag-ms` (a KRaft leader
        appends a NoOp every 500 ms, so a current follower stays near that); None before the first batch."""
        return max(0.0, now - self.last_batch_time) if self.last_batch_time >= 0 else None

    def stalled(self, now: float) -> str | None:
        return stall_reason(self, self.stall_after_s, now)

    def describe(self, now: float) -> list[str]:
        """One line for the state (FOLLOWING or STALLED), then one per gap noticed."""
        where = (f"{self.line}; published up to offset {self.published_offset}; written "
                 f"{now - self.written_at:.0f} s ago by pid {self.pid}")
        reason = self.stalled(now)
        if self.failed:
            state = f"FAILED: {self.failed}; {where}"
        elif reason:
            state = f"STALLED: {reason} (threshold {self.stall_after_s:g} s); {where}"
        else:
            state = f"FOLLOWING: {where}"
        return [state, *(noticed(gap) for gap in self.gaps)]


def noticed(gap: Gap) -> str:
    """A gap's line: the warehouse's words for the same gap (`replay.visibility.Gap`), and when it was noticed."""
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(gap.noticed_at_ms / 1000))
    return f"gap: {gap.describe()}; noticed {at}"


def write_status(path: Path, status: Status) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(asdict(status)) + "\n")
    temporary.replace(path)


def read_status(path: Path) -> Status:
    try:
        fields = json.loads(path.read_text())
        gaps = tuple(Gap(**gap) for gap in fields.pop("gaps", ()))
        return Status(**fields, gaps=gaps)
    except FileNotFoundError:
        raise StatusError(f"{path}: no status file (is a follower running with --status-file {path}?)") from None
    except (OSError, ValueError, TypeError) as error:
        raise StatusError(f"{path}: not a follower's status file: {error}") from None
