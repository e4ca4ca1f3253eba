"""The resource bounds every fuzz run holds a reader to: memory that cannot follow a length field's claim,
and time per input that rules out a hang."""

from __future__ import annotations

import resource

ADDRESS_SPACE_BYTES = 1 << 30  # a 2 GiB length claim must fail to allocate, not pass unnoticed
SECONDS_PER_INPUT = 2.0  # inputs are at most ~60 KB: anything slower is a loop driven by a claim


def cap_address_space(limit: int = ADDRESS_SPACE_BYTES) -> None:
    """Make an allocation beyond `limit` raise MemoryError (a finding) instead of swapping the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
