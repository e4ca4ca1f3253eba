"""Waiting for a streaming job to be into its micro-batches before a fault is armed: polled on the warehouse,
not a guessed sleep past Spark's start-up (which takes 10 s on a quiet machine and a minute on a loaded one)."""

from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

from tests.lake.warehouse_state import last_published

START_TIMEOUT_S = 300.0  # the first image of a fresh job, on a loaded machine
RESTART_WAIT_S = 90.0  # a restarted job's next image: none comes when the run before it had published all


def into_micro_batches(job: subprocess.Popen, warehouse: Path, rng: random.Random, past: int | None = None) -> None:
    """Return once `job` has published an image (past `past`, the last one before a restarted job started: if
    none comes within RESTART_WAIT_S, the run before had published everything), then a random 0-2 s more, so
    the fault lands at a different point of the stream each time."""
    start = time.monotonic()
    while (published := last_published(warehouse)) is None or (past is not None and published <= past):
        assert job.poll() is None, f"the job exited with {job.returncode} before publishing past {past}"
        waited = time.monotonic() - start
        if published is not None and waited > RESTART_WAIT_S:
            break
        assert waited < START_TIMEOUT_S, f"the job published no image in {START_TIMEOUT_S:.0f} s"
        time.sleep(0.25)
    time.sleep(rng.uniform(0, 2))
