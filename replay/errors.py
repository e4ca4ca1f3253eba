"""Errors of the replay layer: a record that cannot apply to the image it meets."""

from __future__ import annotations


class ReplayError(Exception):
    """A record that cannot be applied. Names its offset (and source when known) so the log can be fixed."""

    def __init__(self, reason: str, *, offset: int | None = None, source: str | None = None) -> None:
        self.reason = reason
        self.offset = offset
        self.source = source
        where = ", ".join(p for p in (source, None if offset is None else f"offset {offset}") if p)
        super().__init__(f"{where}: {reason}" if where else reason)

    def at(self, offset: int, source: str | None = None) -> ReplayError:
        """The same error located at `offset` (kept if already located)."""
        return ReplayError(
            self.reason,
            offset=self.offset if self.offset is not None else offset,
            source=self.source if self.source is not None else source,
        )
