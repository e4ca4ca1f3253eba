"""Python's cyclic garbage collector, paused while the job replays a micro-batch (or ingests a log).

Replay allocates millions of small objects (records, partition registrations, row tuples) and nearly all of
them live on, in the image or until they are written. Allocation keeps triggering collections, and each time
the surviving heap has grown by a quarter a full collection rescans all of it: measured on a 100k-partition
bootstrap, that was more CPU than the replay itself. Replay makes no reference cycles, so pausing the
collector loses nothing; afterwards one collection reclaims whatever cycles other code left, and after a big
unit of work the survivors are frozen (`gc.freeze`) so later collections never rescan the image.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Freeze only after work that left this many new objects: a bootstrap or catch-up, not a steady-state
# micro-batch, so that little else (Spark's per-batch objects) is frozen along with the image.
FREEZE_ABOVE_OBJECTS = 100_000


@contextmanager
def paused_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_count()[0] > FREEZE_ABOVE_OBJECTS:
            gc.collect()
            gc.freeze()
        if enabled:
            gc.enable()
