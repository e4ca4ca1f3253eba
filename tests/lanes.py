"""The suite's two lanes: `make test` runs them side by side, one pytest-xdist worker each (`-n 2`).

Run one after another the suite kept one of the machine's two cores busy on average (its Kafka, Spark and server
processes mostly wait on each other), so the lanes overlap that waiting. Each lane is whole folders, fixed in
advance rather than handed out as workers come free, so a lane starts only the servers its own folders use (each
worker has its own session fixtures; `tests.lifetimes` ends each after the last test of its lane that uses it):
the standalone Spark cluster and PostgreSQL are only lane `jobs`'s, the browser and Prometheus mostly one lane's.
Balanced by the folders' times in a quiet run (2026-12-01, `time per test folder`): lane `lake` ~1,030 s (lake
508, analytics 221, explorer 85, docs 75, replay 73, fixtures 67), lane `jobs` ~1,080 s (fleet 402, jobs 247,
follow 115, metrics 87 and the unit folders ~230)."""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

LAKE_LANE = frozenset({"tests/lake", "tests/analytics", "tests/explorer", "tests/docs", "tests/replay",
                       "tests/fixtures"})


def lane(nodeid: str) -> str:
    """The lane of a test (`tests/lake/test_scan.py::test_x` → `lake`): its folder's."""
    folder = "/".join(nodeid.split("::", 1)[0].split("/")[:2])
    return "lake" if folder in LAKE_LANE else "jobs"


class LaneScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with a lane as the scope: each worker is sent one whole lane."""

    def _split_scope(self, nodeid: str) -> str:
        return lane(nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LaneScheduling:
    return LaneScheduling(config, log)
