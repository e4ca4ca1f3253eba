"""Dynamic configs per resource (topic, broker, cluster default, logger, client metrics, group)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kraftlake.records.config_secrecy import BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, TOPIC
from kraftlake.replay.mapping import EMPTY, empty_map, merged

RESOURCE_TYPE_NAMES = {
    TOPIC: "topic",
    BROKER: "broker",
    BROKER_LOGGER: "broker_logger",
    CLIENT_METRICS: "client_metrics",
    GROUP: "group",
}


class ConfigResource(NamedTuple):
    resource_type: int
    resource_name: str  # "" for the cluster-wide default of a broker config


@dataclass(frozen=True)
class ConfigurationsImage:
    resources: Mapping[ConfigResource, Mapping[str, str]] = field(default_factory=empty_map)

    def is_empty(self) -> bool:
        return not self.resources


class ConfigurationsDelta:
    def __init__(self, image: ConfigurationsImage) -> None:
        self.image = image
        self.changes: dict[ConfigResource, dict[str, str | None]] = {}

    def replay_config(self, record: Any) -> None:
        resource = ConfigResource(record.resource_type, record.resource_name)
        self.changes.setdefault(resource, {})[record.name] = record.value

    def configs(self, resource: ConfigResource) -> Mapping[str, str]:
        """The configs of `resource` with this delta applied."""
        return merged(self.image.resources.get(resource, EMPTY), self.changes.get(resource, {}))

    def delete_topic_configs(self, topic_name: str) -> None:
        """A removed topic takes its configs with it (MetadataDelta does this on RemoveTopicRecord)."""
        resource = ConfigResource(TOPIC, topic_name)
        keys = set(self.image.resources.get(resource, {})) | set(self.changes.get(resource, {}))
        self.changes[resource] = dict.fromkeys(keys)

    def finish_snapshot(self) -> None:
        for resource, configs in self.image.resources.items():
            changed = self.changes.setdefault(resource, {})
            for key in configs:
                changed.setdefault(key, None)

    def apply(self) -> ConfigurationsImage:
        updated: dict[ConfigResource, Mapping[str, str] | None] = {}
        for resource, changes in self.changes.items():
            configs = merged(self.image.resources.get(resource, EMPTY), changes)
            updated[resource] = configs if configs else None
        return ConfigurationsImage(merged(self.image.resources, updated))

