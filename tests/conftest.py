"""Shared pytest configuration: fixtures live in tests/fixtures/, one module per real dependency."""

from pathlib import Path

import pytest
from hypothesis import settings

pytest_plugins: list[str] = [
    "tests.fixtures.broker", "tests.fixtures.spark", "tests.fixtures.browser", "tests.fixtures.s3",
    "tests.fixtures.spark_cluster", "tests.fixtures.kafka_cluster", "tests.fixtures.postgres",
    "tests.fixtures.prometheus", "tests.fixtures.alertmanager", "tests.timing",
    "tests.lifetimes",
]

# No property test has a per-example deadline (Hypothesis' default is 200 ms): on a loaded machine an example can
# take longer with nothing wrong, and a test must not depend on the machine's speed.
settings.register_profile("kraftlake", deadline=None)
settings.load_profile("kraftlake")

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "kafka-samples"
# Fixtures that start a JVM (Kafka, Spark) or a server process: a test using one is marked `jvm`, and
# `make check` (`-m "not jvm"`) leaves it to `make test`.
JVM_FIXTURES = {"kafka_broker", "spark", "spark_cluster", "kafka_cluster", "kafka_cluster_factory", "operator_scenario",
                "s3_store", "chromium", "browser", "prometheus", "alertmanager"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if JVM_FIXTURES & set(getattr(item, "fixturenames", ())) or item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.jvm)


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    """The real Kafka metadata files in ../shared/kafka-samples (a conformance test needs them)."""
    assert SAMPLES.is_dir(), f"missing {SAMPLES}: the shared folder must sit beside the repo"
    return SAMPLES
