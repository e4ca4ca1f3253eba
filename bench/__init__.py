"""Benchmarks of the project's hot paths, run by `make bench`; results go to BENCHMARKS.md (see __main__)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_seconds(work: Callable[[], object], repeat: int = 5, warmup: int = 1) -> float:
    """Median CPU time of `work()` over `repeat` runs after `warmup` unmeasured ones (caches, code paths).

    CPU time of this process, not wall time: the benchmarks are single-threaded, and on a shared machine
    (CI, other test suites) wall time mostly measures the neighbours.
    """
    for _ in range(warmup):
        work()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times)


def row(name: str, value: Any, unit: str = "s", notes: str = "") -> dict[str, Any]:
    """One result row, as `bench.__main__` renders it into BENCHMARKS.md."""
    return {"name": name, "value": value, "unit": unit, "notes": notes}
