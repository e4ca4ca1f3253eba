"""A fleet-wide budget for offset-only publishes: the idle cost of a fleet independent of its size.

Every idle cluster's controller writes a NoOp every 500 ms, and each cluster's pipeline publishes the image
that only moves the offset every `idle_publish_seconds` (`kraftlake.lake.pipeline`): two Delta appends
(`batches`, `images`) and the maintenance check after them, about 16 ms of CPU on this machine (BENCHMARKS.md
fleet, 2026-12-04). At 200 clusters that was 20 such publishes a second, whatever changed. The fleet's
pipelines share one `IdleBudget` instead: at most `rate` offset-only publishes a second in all (a burst of
at most one second's worth), given to the cluster that has waited longest since its last write (round
robin), so an idle cluster's last offset is readable at most max(`idle_publish_seconds`, clusters / `rate`)
late, plus a micro-batch. A change is never budgeted: an image that changes a row publishes at once, and
publishing it resets the cluster's wait. Under load a budget that cannot be spent is not saved up: a fleet
whose micro-batches last long publishes fewer idle images, leaving the time to its changes.

Weighed against it (measured, BENCHMARKS.md fleet): a cheaper offset-only publish. Of the 16 ms the two
appends are 11 and the maintenance 5 (mean; 1 ms median), and both appends are the commit protocol (the
`batches` rows carry the offsets, the `images` row publishes them and fences a stale writer), so at most a
third could go, and the cost would still grow with the number of clusters.
"""

from __future__ import annotations

import threading
import time

PER_SECOND = 4.0  # the default rate: 16 ms of CPU a publish is 6 % of a core; clusters / 4 s late past 40 clusters
EXPIRE_S = 30.0  # a waiter that has not asked for this long (its cluster went silent or stopped) is forgotten


class IdleBudget:
    """Offset-only publishes shared by a fleet's pipelines, `rate` a second in all, the longest wait first."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._tokens = self._burst()
        self._at = time.monotonic()
        self._waiting: dict[int, tuple[float, float]] = {}  # id(waiter) -> (its last write, when it last asked)
        self._lock = threading.Lock()  # the fleet job's micro-batch and its driver loop's catch-up both ask

    def _burst(self) -> float:
        return max(1.0, self.rate)

    def grant(self, waiter: object, since: float) -> bool:
        """Whether `waiter` (a pipeline holding an offset-only image since its last write at `since`, on
        `time.monotonic`) may publish it now: a token is left once every waiter that has waited longer had
        theirs. Asked again at its next commit when refused."""
        with self._lock:
            return self._grant(id(waiter), since)

    def _grant(self, key: int, since: float) -> bool:
        now = time.monotonic()
        self._tokens = min(self._burst(), self._tokens + (now - self._at) * self.rate)
        self._at = now
        self._waiting = {other: entry for other, entry in self._waiting.items() if now - entry[1] < EXPIRE_S}
        self._waiting[key] = (since, now)
        ahead = sum(1 for other, (last, _) in self._waiting.items() if (last, other) < (since, key))
        if self._tokens - ahead < 1:
            return False
        self._tokens -= 1
        del self._waiting[key]
        return True

    def withdraw(self, waiter: object) -> None:
        """`waiter` wrote for another reason (a change, a snapshot, a flush) or stopped: it waits no more."""
        with self._lock:
            self._waiting.pop(id(waiter), None)
