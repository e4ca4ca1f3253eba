"""Which published image answers offset N: the one rule every reader follows (`replay`, the warehouse).

Kafka's rule: the image at offset N is the last image Kafka's loader publishes at or before N
(`replay.loader` publishes at exactly those points: the end of each Raft batch outside a transaction, the
offset before a Begin that arrives with records pending; nothing before the first metadata record). So an
offset inside a batch or an open transaction is answered by an earlier image, and its provenance names
both offsets. What the log does not say is refused, never guessed: before the first image, past the end,
inside a gap (offsets Kafka deleted before they were read, bridged by a snapshot).

Both readers describe the batch holding N the same way (`BatchPublishes`: in memory for `replay`, one
`batches` row for the warehouse), so one batch answers any N in it, however long a transaction runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime


class OffsetNotKnown(Exception):
    """An offset no published image answers; the message (one line) names what is known."""


@dataclass(frozen=True)
class BatchPublishes:
    """One Raft batch's part in visibility: the images published inside it (offsets, ascending) and the
    offset of the image in force at its start (None: none yet)."""

    base_offset: int
    last_offset: int
    published: tuple[int, ...]
    in_force_before: int | None


@dataclass(frozen=True)
class Gap:
    """Offsets a source never read (Kafka deleted them first): `first`..`last`, bridged by the snapshot that
    ends at `snapshot_end_offset` (exclusive, as Kafka names snapshots), noticed at `noticed_at_ms`."""

    first: int
    last: int
    snapshot_end_offset: int
    snapshot_epoch: int
    noticed_at_ms: int

    def describe(self) -> str:
        return (f"offsets {self.first}..{self.last} were deleted by Kafka before they were read (a gap, bridged "
                f"by the snapshot at offset {self.snapshot_end_offset - 1})")


@dataclass(frozen=True)
class Known:
    """What a log or warehouse can answer: its first published image, its last offset read, its last
    published image (None: none), and its gaps; with the append times of the first image and of the last offset
    (-1: not known). One definition for every place that states what is known (`WarehouseReader.known` for a
    warehouse)."""

    first_image: int | None
    last_offset: int
    last_image: int | None
    gaps: Sequence[Gap] = ()
    first_time_ms: int = -1
    last_time_ms: int = -1

    def span(self) -> tuple[int, int]:
        """The first and the last offset answered (OffsetNotKnown before any image)."""
        if self.first_image is None:
            raise OffsetNotKnown(self.describe())
        return self.first_image, self.last_offset

    def describe(self) -> str:
        if self.first_image is None:
            return f"no image is published yet (offsets read through {self.last_offset})"
        gaps = "".join(f", except {gap.first}..{gap.last} (a gap)" for gap in self.gaps)
        times = f" ({time_span(self.first_time_ms, self.last_time_ms)})" if self.last_time_ms >= 0 else ""
        return f"images answer offsets {self.first_image}..{self.last_offset}{times}{gaps}"


def time_span(first_ms: int, last_ms: int) -> str:
    """`2026-11-27 02:13:40 → 02:14:15 UTC`: the times of a range as every place that states one says them (the
    second's date only when it is another day; "time unknown" for -1)."""
    def stamp(time_ms: int, form: str) -> str:
        return datetime.fromtimestamp(time_ms / 1000, UTC).strftime(form) if time_ms >= 0 else "time unknown"

    day, second = "%Y-%m-%d", "%Y-%m-%d %H:%M:%S"
    same_day = first_ms >= 0 and stamp(first_ms, day) == stamp(last_ms, day)
    return f"{stamp(first_ms, second)} → {stamp(last_ms, '%H:%M:%S' if same_day else second)} UTC"


def gap_holding(offset: int, gaps: Sequence[Gap]) -> Gap | None:
    return next((gap for gap in gaps if gap.first <= offset <= gap.last), None)


def image_offset(offset: int, batch: BatchPublishes | None, known: Known) -> int:
    """The offset of the published image that answers `offset`, given the batch holding it (None: none does;
    a snapshot's image stands for a batch of its own offset). Raises OffsetNotKnown naming the known range."""
    gap = gap_holding(offset, known.gaps)
    if gap is not None:
        raise OffsetNotKnown(f"offset {offset} is unknown: {gap.describe()}")
    if known.first_image is None or known.last_image is None:
        raise OffsetNotKnown(f"offset {offset}: {known.describe()}")
    if batch is None or not batch.base_offset <= offset <= batch.last_offset:
        if offset > known.last_offset:
            raise OffsetNotKnown(f"offset {offset} is past the end: {known.describe()}")
        if offset < known.first_image:
            raise OffsetNotKnown(f"offset {offset} is before the first published image (offset {known.first_image})")
        raise OffsetNotKnown(f"offset {offset} is not on record: {known.describe()}")
    earlier = [published for published in batch.published if published <= offset]
    answer = earlier[-1] if earlier else batch.in_force_before
    if answer is None:
        raise OffsetNotKnown(f"offset {offset} is before the first published image (offset {known.first_image})")
    if answer > known.last_image:
        raise OffsetNotKnown(f"offset {offset} is past the last published image: {known.describe()}")
    return answer
