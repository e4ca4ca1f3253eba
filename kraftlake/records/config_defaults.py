"""Kafka's default for each broker and topic config, and the cluster default a topic config falls back to, so a
page can say where a value at the cursor comes from (kafka-ui's and AKHQ's "source").

The definitions are Kafka 4.4's, generated from its jars into `kafka_config_defaults.tsv` (`make config-defaults`;
tests/explorer/test_config_defaults.py checks the file against Kafka's own code). A broker's static
`server.properties` is not in the metadata log: a broker config's "default" is Kafka's, not what the file set.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.resources import files

DEFAULTS_FILE = "kafka_config_defaults.tsv"
NO_DEFAULT = r"\N"
_UNESCAPE = {"\\\\": "\\", "\\t": "\t", "\\n": "\n"}


@dataclass(frozen=True)
class ConfigDefault:
    value: str | None  # None: Kafka defines no default (or a null one)
    broker_synonym: str | None  # a topic config's cluster default (`retention.ms` ← `log.retention.ms`)


def _unescaped(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        pair = text[i:i + 2]
        if pair in _UNESCAPE:
            out.append(_UNESCAPE[pair])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


@cache
def config_defaults() -> dict[str, dict[str, ConfigDefault]]:
    """Kafka's defaults by scope (`broker`, `topic`), then by config name."""
    scopes: dict[str, dict[str, ConfigDefault]] = {}
    for line in files("kraftlake.records").joinpath(DEFAULTS_FILE).read_text(encoding="utf-8").splitlines():
        scope, name, value, synonym = line.split("\t")
        scopes.setdefault(scope, {})[name] = ConfigDefault(None if value == NO_DEFAULT else _unescaped(value),
                                                           synonym or None)
    return scopes


def config_source(resource_type: str, resource_name: str) -> str:
    """Where a dynamic config set on this resource applies from, as operators name it."""
    if resource_type == "broker":
        return "dynamic broker" if resource_name else "cluster default"
    return resource_type.replace("_", " ")


def kafka_default(resource_type: str, name: str) -> str | None:
    """Kafka's default of config `name` of a `broker` or `topic` resource (None: none, or another type)."""
    found = config_defaults().get(resource_type, {}).get(name)
    return None if found is None else found.value


def topic_fallbacks() -> dict[str, str]:
    """Each broker config a topic config falls back to, to the topic config's name."""
    return {d.broker_synonym: name for name, d in config_defaults()["topic"].items() if d.broker_synonym}
