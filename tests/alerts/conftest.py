"""Every `kraftlake alert` a test starts (`test_alert_job.start`) is killed after the test, passed or not."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

RUNNING: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def no_job_left() -> Iterator[None]:
    yield
    while RUNNING:
        process = RUNNING.pop()
        if process.poll() is None:
            process.kill()
            process.wait(60)
