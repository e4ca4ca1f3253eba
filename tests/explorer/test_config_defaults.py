"""Kafka's config defaults as kraftlake keeps them are the ones in Kafka's jars, and the explorer says where a
config at the cursor comes from (topic, dynamic broker, cluster default) beside Kafka's default."""

from __future__ import annotations

from importlib.resources import files

import pytest
from fastapi.testclient import TestClient

from kraftlake.records.config_defaults import DEFAULTS_FILE, config_defaults, kafka_default
from tests.records.test_config_secrecy import _kafka

API = "/api/v1/clusters/demo"


@pytest.mark.jvm
def test_the_kept_defaults_are_kafkas() -> None:
    kept = files("kraftlake.records").joinpath(DEFAULTS_FILE).read_text(encoding="utf-8")
    assert kept == _kafka("--defaults"), f"kraftlake/records/{DEFAULTS_FILE} is not Kafka's: `make config-defaults`"


def test_defaults_and_fallbacks_read_as_kafka_has_them() -> None:
    assert kafka_default("topic", "retention.ms") == "604800000"
    assert kafka_default("broker", "log.retention.hours") == "168"
    assert kafka_default("broker", "log.retention.ms") is None
    assert kafka_default("broker", "ssl.keystore.password") is None
    assert config_defaults()["topic"]["retention.ms"].broker_synonym == "log.retention.ms"


def test_configs_say_their_source_and_default(demo_client: TestClient) -> None:
    rows = demo_client.get(f"{API}/image/configs").json()["rows"]
    origin = {(r["resource_type"], r["resource_name"], r["name"]): (r["source"], r["default"]) for r in rows}
    assert origin == {("broker", "", "min.insync.replicas"): ("cluster default", "1"),
                      ("broker", "0", "ssl.keystore.password"): ("dynamic broker", None),
                      ("topic", "orders", "min.insync.replicas"): ("topic", "1"),
                      ("topic", "orders", "retention.ms"): ("topic", "604800000")}
    assert demo_client.get("/clusters/demo/image/configs").status_code == 200
