"""Dynamic configs: set, null deletes, a removed topic takes its configs, a snapshot drops keys per resource."""

from __future__ import annotations

from kraftlake.records import metadata_types as mt
from kraftlake.replay.configs import BROKER, TOPIC, ConfigResource
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import MetadataImage, Provenance
from tests.replay.builders import P, T, apply_records, remove


def config(resource_type: int, resource_name: str, name: str, value: str | None) -> object:
    return mt.ConfigRecord(resource_type=resource_type, resource_name=resource_name, name=name, value=value)


def configs(image: MetadataImage) -> dict[ConfigResource, dict[str, str]]:
    return {resource: dict(values) for resource, values in image.configs.resources.items()}


def test_set_and_overwrite() -> None:
    image = apply_records([
        config(BROKER, "", "min.insync.replicas", "2"),
        config(BROKER, "1", "log.cleaner.threads", "2"),
        config(BROKER, "1", "log.cleaner.threads", "4"),
    ])
    assert configs(image) == {
        ConfigResource(BROKER, ""): {"min.insync.replicas": "2"},
        ConfigResource(BROKER, "1"): {"log.cleaner.threads": "4"},
    }


def test_a_null_value_deletes_the_key_and_an_empty_resource_goes_away() -> None:
    before = apply_records([config(TOPIC, "foo", "a", "1"), config(TOPIC, "foo", "b", "2")])
    one_left = apply_records([config(TOPIC, "foo", "a", None)], before)
    assert configs(one_left) == {ConfigResource(TOPIC, "foo"): {"b": "2"}}
    none_left = apply_records([config(TOPIC, "foo", "b", None)], one_left)
    assert none_left.configs.is_empty()
    assert apply_records([config(TOPIC, "foo", "a", "1"), config(TOPIC, "foo", "a", None)]).configs.is_empty()


def test_remove_topic_deletes_that_topics_configs_only() -> None:
    before = apply_records([
        T("foo"), P("foo", 0), T("bar"),
        config(TOPIC, "foo", "retention.ms", "1"), config(TOPIC, "bar", "retention.ms", "2"),
        config(BROKER, "foo", "x", "3"),
    ])
    delta = MetadataDelta(before)
    delta.replay(config(TOPIC, "foo", "cleanup.policy", "compact"))
    delta.replay(remove("foo"))
    after = delta.apply(Provenance())
    assert configs(after) == {
        ConfigResource(TOPIC, "bar"): {"retention.ms": "2"},
        ConfigResource(BROKER, "foo"): {"x": "3"},
    }


def test_configs_set_after_a_topic_is_recreated_survive() -> None:
    before = apply_records([T("foo"), config(TOPIC, "foo", "retention.ms", "1")])
    after = apply_records([remove("foo"), T("foo", "AAAAAAAAAAAAAAAAAAAAGQ"), config(TOPIC, "foo", "segment.ms", "5")],
                          before)
    assert configs(after) == {ConfigResource(TOPIC, "foo"): {"segment.ms": "5"}}


def test_finish_snapshot_drops_keys_not_reasserted() -> None:
    before = apply_records([config(TOPIC, "foo", "a", "1"), config(TOPIC, "foo", "b", "2"),
                            config(BROKER, "", "c", "3")])
    delta = MetadataDelta(before)
    delta.replay(config(TOPIC, "foo", "b", "20"))
    delta.finish_snapshot()
    assert configs(delta.apply(Provenance())) == {ConfigResource(TOPIC, "foo"): {"b": "20"}}
