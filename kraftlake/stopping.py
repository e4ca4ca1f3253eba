"""How a long-running command stops cleanly (`follow`, `follow --fleet`, `materialize`, the spark-submit job):
SIGTERM or SIGINT sets an event its loop looks at, so it ends its work, exits 0, and a service manager's stop
is not a crash."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def stop_on_signals() -> threading.Event:
    """An event SIGTERM and SIGINT set from now on (call from the main thread)."""
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    return stop
