"""Python's cyclic garbage collector, paused while a log is replayed.

Replay allocates millions of small objects (records, partition registrations) and nearly all of them live
on in the image. Allocation keeps triggering collections, and each time the surviving heap has grown by a
quarter a full collection rescans all of it: on bench_replay's 1M-partition log that was half the replay's
CPU time (nine full collections of 1.3M objects). Replay makes no reference cycles (images and deltas are
trees of tuples, dicts and frozen dataclasses, freed by reference counting), so pausing the collector loses
nothing. After a big replay its survivors, the image, are frozen (`gc.freeze`): re-enabled, the collector
would otherwise scan them all at its next run, and rescan them at every full one. Frozen objects are still
freed by reference counting when the image is dropped. Every bulk replay runs under it: `kraftlake replay`,
and `ingest` and the job through `lake.gc_pause`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Freeze only after work that left this many new objects: a bootstrap or catch-up, not a steady-state
# micro-batch, so that little else is frozen along with the image.
FREEZE_ABOVE_OBJECTS = 100_000


@contextmanager
def paused_collector(collect: bool = False) -> Iterator[None]:
    """No automatic collection inside; after a body that left many new objects, they are frozen, with a
    collection first if `collect` (a long-lived process whose other code may have left cycles: it scans
    everything the body allocated). The collector's state is restored after; nesting is fine."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if gc.get_count()[0] > FREEZE_ABOVE_OBJECTS:
            if collect:
                gc.collect()
            gc.freeze()
    finally:
        if enabled:
            gc.enable()
