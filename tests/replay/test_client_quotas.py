"""Client quotas per entity: set, remove, default entities, snapshot removal."""

from __future__ import annotations

from collections.abc import Mapping

from kraftlake.records import metadata_types as mt
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import MetadataImage, Provenance
from tests.replay.builders import apply_records


def quota(entity: Mapping[str, str | None], key: str, value: float, remove: bool = False) -> object:
    return mt.ClientQuotaRecord(
        entity=tuple(mt.EntityData(entity_type=k, entity_name=v) for k, v in entity.items()),
        key=key, value=value, remove=remove,
    )


ALICE = {"user": "alice", "client-id": "app"}
DEFAULT_USER = {"user": None}


def quotas(image: MetadataImage) -> dict[tuple, dict[str, float]]:
    return {entity: dict(q) for entity, q in image.client_quotas.entities.items()}


def test_entity_is_independent_of_field_order() -> None:
    reordered = {"client-id": "app", "user": "alice"}
    image = apply_records([quota(ALICE, "producer_byte_rate", 1.0), quota(reordered, "producer_byte_rate", 2.0)])
    assert quotas(image) == {(("client-id", "app"), ("user", "alice")): {"producer_byte_rate": 2.0}}


def test_remove_drops_the_key_and_then_the_entity() -> None:
    before = apply_records([
        quota(ALICE, "producer_byte_rate", 1.0), quota(ALICE, "consumer_byte_rate", 2.0),
        quota(DEFAULT_USER, "request_percentage", 50.0),
    ])
    one = apply_records([quota(ALICE, "producer_byte_rate", 0.0, remove=True)], before)
    assert quotas(one)[(("client-id", "app"), ("user", "alice"))] == {"consumer_byte_rate": 2.0}
    two = apply_records([quota(ALICE, "consumer_byte_rate", 0.0, remove=True)], one)
    assert quotas(two) == {(("user", None),): {"request_percentage": 50.0}}


def test_finish_snapshot_drops_quotas_not_reasserted() -> None:
    before = apply_records([quota(ALICE, "producer_byte_rate", 1.0), quota(DEFAULT_USER, "request_percentage", 5.0)])
    delta = MetadataDelta(before)
    delta.replay(quota(DEFAULT_USER, "request_percentage", 6.0))
    delta.finish_snapshot()
    assert quotas(delta.apply(Provenance())) == {(("user", None),): {"request_percentage": 6.0}}
