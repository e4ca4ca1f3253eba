"""Session fixtures that start servers end after the last test that uses them, not when the session ends.

An idle Kafka node still commits a NoOp every 500 ms and polls its quorum; the clusters, the Spark cluster and
the object store that the middle of the suite starts would otherwise idle through the rest of the run, costing
a loaded 2-core machine part of a core and gigabytes of memory. Finishing a fixture finishes the fixtures that
depend on it first (pytest registers each dependent's teardown on what it requested)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

SERVERS = frozenset({"kafka_broker", "spark", "spark_cluster", "kafka_cluster", "kafka_cluster_factory",
                     "operator_scenario", "s3_store", "chromium", "browser", "postgres",
                     "prometheus"})
_users: Counter[str] = Counter()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Count, after selection, the tests that use each server fixture (directly or through another fixture)."""
    _users.clear()
    for item in session.items:
        _users.update(SERVERS.intersection(getattr(item, "fixturenames", ())))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    result = yield
    if not isinstance(item, pytest.Function):
        return result
    for name in sorted(SERVERS.intersection(item.fixturenames)):
        _users[name] -= 1
        definitions = item._fixtureinfo.name2fixturedefs.get(name)
        if _users[name] == 0 and definitions and nextitem is not None:  # the last test: the session ends it anyway
            definitions[-1].finish(item._request)  # type: ignore[arg-type]  # finish reads only its node
    return result
