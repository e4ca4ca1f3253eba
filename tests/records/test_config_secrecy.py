"""kraftlake's secret rule equals Kafka's (`AbstractKafkaConfig.loggableValue`), name for name, and the config
definitions it reads are the ones in Kafka's jars."""

from __future__ import annotations

import subprocess
from importlib.resources import files

import pytest

from kraftlake.records.config_secrecy import TYPES_FILE, config_types, is_secret_config
from tests.harness.kafka_oracle import JVM_OPTIONS, oracle_classpath

pytestmark = pytest.mark.jvm
TOOL = "kraftlake.oracle.KafkaConfigTypes"
# ConfigResource.Type ids: UNKNOWN, TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, and ids Kafka lacks.
RESOURCE_TYPES = (0, 2, 4, 8, 16, 32, 1, 64)
ODD_NAMES = ("", "custom.plugin.secret.free", "RETENTION.MS", "retention.ms ", "listener.name.", "listener.name.x.",
             "listener.name.x.y.retention.ms", "listener.name..ssl.key.password",
             "listener.name.a.b.c.sasl.jaas.config", "listener.name.ext.plain.sasl.login.class", "log.roll.hours",
             "password", "metrics", "interval.ms", "match")
LISTENERS = ("external", "sasl_ssl.scram-sha-256")  # a plain override, and a per-mechanism one


def _kafka(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(["java", *JVM_OPTIONS, "-cp", oracle_classpath(), TOOL, *args], input=stdin,
                          capture_output=True, text=True, timeout=300, check=True)
    return done.stdout


def test_the_kept_definitions_are_kafkas() -> None:
    kept = files("kraftlake.records").joinpath(TYPES_FILE).read_text(encoding="utf-8")
    assert kept == _kafka(), f"kraftlake/records/{TYPES_FILE} is not what Kafka's jars define: `make config-types`"


def _names() -> list[str]:
    """Every config Kafka defines, each as a listener override and a per-mechanism one, and odd names."""
    known = sorted({name for scope in config_types().values() for name in scope})
    overrides = [f"listener.name.{listener}.{name}" for name in known for listener in LISTENERS]
    return [*known, *overrides, *ODD_NAMES]


def test_every_decision_is_kafkas() -> None:
    cases = [(resource_type, name) for resource_type in RESOURCE_TYPES for name in _names()]
    stdin = "".join(f"{resource_type}\t{name}\n" for resource_type, name in cases)
    theirs = _kafka("--loggable", stdin=stdin).splitlines()
    ours = ["hidden" if is_secret_config(resource_type, name) else "shown" for resource_type, name in cases]
    differences = [(case, mine, kafka) for case, mine, kafka in zip(cases, ours, theirs, strict=True) if mine != kafka]
    assert not differences, differences[:20]
    assert "shown" in ours and "hidden" in ours
    assert len(theirs) == len(cases) > 5000
