"""Which config values are secret: Kafka's rule (`AbstractKafkaConfig.loggableValue`), not a list of names.

A value is secret when Kafka's ConfigDef types the config `PASSWORD`, or when Kafka does not know the config
("if we can't determine the config entry type, treat it as a sensitive config to be safe"): a custom plugin's
secret must not show because its name looks harmless. Broker configs are looked up as Kafka does, a
`listener.name.<listener>.` override by the config it overrides; topic and group configs in their own
definitions; logger levels and client-metrics subscriptions are never secret; any other resource type always is.

The definitions are Kafka 4.4's, generated from its jars into `kafka_config_types.tsv` (`make config-types`;
tests/records/test_config_secrecy.py checks the file and this rule against Kafka's own code). A config an older
Kafka knew and 4.4 removed is unknown here, so it is kept secret.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32  # Kafka's ConfigResource.Type ids
_NEVER_SECRET = frozenset({BROKER_LOGGER, CLIENT_METRICS})
_LISTENER_OVERRIDE = re.compile(r"listener\.name\.[^.]*\.(.*)")
# The per-mechanism listener configs (`listener.name.L.<mechanism>.sasl.jaas.config`), as Kafka's
# brokerConfigSynonyms lists them: the override stands for the config its name ends with.
_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                      "sasl.server.callback.handler.class", "connections.max.reauth.ms")
TYPES_FILE = "kafka_config_types.tsv"


@cache
def config_types() -> dict[str, dict[str, str]]:
    """Kafka's config types by scope (`broker`, `broker_dynamic`, `topic`, `group`), then by name."""
    scopes: dict[str, dict[str, str]] = {}
    for line in files("kraftlake.records").joinpath(TYPES_FILE).read_text(encoding="utf-8").splitlines():
        scope, name, config_type = line.split("\t")
        scopes.setdefault(scope, {})[name] = config_type
    return scopes


def is_secret_config(resource_type: int, name: str) -> bool:
    """Whether Kafka hides the value of config `name` of a resource of type `resource_type`."""
    if resource_type in _NEVER_SECRET:
        return False
    types = config_types()
    if resource_type == TOPIC:
        return _hidden(types["topic"].get(name))
    if resource_type == GROUP:
        return _hidden(types["group"].get(name))
    if resource_type == BROKER:
        return _hidden(_broker_config_type(name, types))
    return True


def _broker_config_type(name: str, types: dict[str, dict[str, str]]) -> str | None:
    exact = types["broker"].get(name) or types["broker_dynamic"].get(name)
    override = _LISTENER_OVERRIDE.fullmatch(name)
    if exact is not None or override is None:
        return exact
    base = override.group(1)
    overridden = next((config for config in _MECHANISM_CONFIGS if base.endswith(config)), base)
    return types["broker"].get(overridden)


def _hidden(config_type: str | None) -> bool:
    return config_type is None or config_type == "PASSWORD"
