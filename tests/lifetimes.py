"""Session fixtures that start servers end after the last test that uses them, not when the session ends; and,
when `make test` runs the suite in two processes (pytest-xdist, `--dist loadgroup`), which tests share one.

An idle Kafka node still commits a NoOp every 500 ms and polls its quorum; the clusters, the Spark cluster and
the object store that the middle of the suite starts would otherwise idle through the rest of the run, costing
a loaded 2-core machine part of a core and gigabytes of memory. Finishing a fixture finishes the fixtures that
depend on it first (pytest registers each dependent's teardown on what it requested).

A process runs whole *units*: the whole session when it runs alone, else an xdist group, which xdist sends to
one worker at once and which runs there in collection order. A test file is a unit of its own, except that the
files using a server slow to start (`SHARED_UNIT`: the Kafka clusters, the Spark cluster) form one unit, so each
such server starts once, in one worker. A fixture ends after its last user within the unit; in a worker, the
servers nearly every file uses, and the object store Spark's sessions keep a filesystem of (`WORKER_LONG`), are
started once and live to the worker's end instead."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath

import pytest
from _pytest.nodeid import NodeId

SERVERS = frozenset({"kafka_broker", "spark", "spark_cluster", "kafka_cluster", "kafka_cluster_factory",
                     "operator_scenario", "s3_store", "chromium", "browser", "postgres",
                     "prometheus"})
SHARED_UNIT = frozenset({"kafka_cluster_factory", "kafka_cluster", "operator_scenario", "spark_cluster"})
SHARED_UNIT_NAME = "kafka-and-spark-clusters"
# and the object store: Spark's Hadoop FileSystem cache keeps an S3 filesystem (its endpoint, the store's port) for
# the session's life, so a store restarted on a new port would be refused to every later Spark read of it
WORKER_LONG = frozenset({"kafka_broker", "spark", "s3_store"})
_last_user: dict[tuple[str, str], str] = {}  # (unit, fixture) -> nodeid of the unit's last test using it


def in_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test's unit as its xdist group, in the id's `@group` suffix the controller schedules by. xdist 3.8
    writes that suffix into `item._nodeid`, which pytest 9 no longer reads (its id is `item._id`), so without
    this every test would be a unit of its own."""
    if in_worker(config) and config.getvalue("loadgroup"):
        units = _units(items)
        for item in items:
            item.add_marker(pytest.mark.xdist_group(units[item.nodeid]))
            item._id = NodeId.parse(f"{item.nodeid}@{units[item.nodeid]}")


def _units(items: list[pytest.Item]) -> dict[str, str]:
    """Each test's unit: its file's path under tests/, or SHARED_UNIT_NAME for a file using a SHARED_UNIT server."""
    shared = {_file(item) for item in items if SHARED_UNIT.intersection(_servers(item))}
    return {item.nodeid: SHARED_UNIT_NAME if _file(item) in shared else _short(_file(item)) for item in items}


def _short(file: str) -> str:
    """`tests/lake/test_gaps.py` → `lake/test_gaps.py`: the group xdist appends to each test's id."""
    return str(PurePosixPath(file).relative_to("tests"))


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _servers(item: pytest.Item) -> frozenset[str]:
    return SERVERS.intersection(getattr(item, "fixturenames", ()))


def _unit(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group") if in_worker(item.config) else None
    return str(marker.args[0]) if marker is not None else "session"


def pytest_collection_finish(session: pytest.Session) -> None:
    """After selection: for each unit and server fixture, the last test (in collection order) that uses it."""
    _last_user.clear()
    for item in session.items:
        for name in _servers(item):
            _last_user[(_unit(item), name)] = item.nodeid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    result = yield
    if not isinstance(item, pytest.Function) or nextitem is None:  # the last test: the session ends them anyway
        return result
    unit, lives_on = _unit(item), WORKER_LONG if in_worker(item.config) else frozenset()
    for name in sorted(_servers(item) - lives_on):
        definitions = item._fixtureinfo.name2fixturedefs.get(name)
        if _last_user.get((unit, name)) == item.nodeid and definitions:
            definitions[-1].finish(item._request)  # type: ignore[arg-type]  # finish reads only its node
    return result
