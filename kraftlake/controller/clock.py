"""Wall-clock milliseconds, injectable: tests move a ManualClock instead of sleeping."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    """Wall time, because token expirations and batch timestamps are wall-clock instants."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)


class ManualClock:
    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            return self._now

    def advance(self, ms: int) -> None:
        with self._lock:
            self._now += ms
