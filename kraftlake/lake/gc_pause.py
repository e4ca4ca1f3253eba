"""Python's cyclic garbage collector, paused while the job replays a micro-batch (or ingests a log).

The pause is `replay.gc_pause`'s (why it loses nothing: see there; row tuples waiting to be written are as
acyclic as the image). The job's driver and `follow` live long and run other code (Spark's, delta-rs's), so
after a big unit of work one collection reclaims whatever cycles that code left before the survivors are
frozen.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kraftlake.replay.gc_pause import paused_collector as replay_paused


@contextmanager
def paused_collector() -> Iterator[None]:
    with replay_paused(collect=True):
        yield
