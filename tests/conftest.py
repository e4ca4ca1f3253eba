"""Shared pytest configuration: fixtures live in tests/fixtures/, one module per real dependency."""

from pathlib import Path

import pytest

pytest_plugins: list[str] = [
    "tests.fixtures.broker", "tests.fixtures.spark", "tests.fixtures.browser", "tests.fixtures.s3",
    "tests.fixtures.spark_cluster", "tests.fixtures.kafka_cluster", "tests.fixtures.postgres",
]

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "kafka-samples"


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    """The real Kafka metadata files in ../shared/kafka-samples (a conformance test needs them)."""
    assert SAMPLES.is_dir(), f"missing {SAMPLES}: the shared folder must sit beside the repo"
    return SAMPLES
