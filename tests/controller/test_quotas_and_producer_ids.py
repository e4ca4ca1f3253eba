"""Client quotas per entity and producer-id blocks."""

from __future__ import annotations

import pytest

from kraftlake.controller.errors import BrokerNotRegisteredError, InvalidRequestError, StaleBrokerEpochError
from kraftlake.records import metadata_types as mt
from tests.controller.conftest import Harness


def test_client_quotas(harness: Harness) -> None:
    mark = harness.offset()
    entity = {"user": "alice", "client-id": None}
    result = harness.wait(harness.controller.alter_client_quotas(
        entity, {"producer_byte_rate": 1024, "consumer_byte_rate": 2048}
    ))
    assert result == {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}
    data = (
        mt.EntityData(entity_type="client-id", entity_name=None), mt.EntityData(entity_type="user", entity_name="alice")
    )
    assert harness.records_after(mark) == [
        mt.ClientQuotaRecord(entity=data, key="consumer_byte_rate", value=2048.0, remove=False),
        mt.ClientQuotaRecord(entity=data, key="producer_byte_rate", value=1024.0, remove=False),
    ]
    mark = harness.offset()
    removals: dict[str, float | None] = {"producer_byte_rate": None, "request_percentage": None}
    harness.wait(harness.controller.alter_client_quotas(entity, removals))
    assert harness.records_after(mark) == [  # removing an absent quota writes nothing
        mt.ClientQuotaRecord(entity=data, key="producer_byte_rate", value=0.0, remove=True),
    ]
    assert list(harness.image.client_quotas.entities.values()) == [{"consumer_byte_rate": 2048.0}]


def test_bad_quotas_are_refused(harness: Harness) -> None:
    for entity, changes in (
        ({}, {"producer_byte_rate": 1}),
        ({"group": "g"}, {"producer_byte_rate": 1}),
        ({"ip": "1.2.3.4", "user": "a"}, {"connection_creation_rate": 1}),
        ({"user": "a"}, {"connection_creation_rate": 1}),
        ({"user": "a"}, {"bogus": 1}),
        ({"user": "a"}, {"producer_byte_rate": -5}),
    ):
        with pytest.raises(InvalidRequestError):
            harness.wait(harness.controller.alter_client_quotas(entity, changes))


def test_producer_id_blocks(harness: Harness) -> None:
    epoch = harness.register(0)
    mark = harness.offset()
    assert harness.wait(harness.controller.allocate_producer_ids(0, epoch)) == (0, 1000)
    assert harness.wait(harness.controller.allocate_producer_ids(0, epoch)) == (1000, 1000)
    assert harness.records_after(mark) == [
        mt.ProducerIdsRecord(broker_id=0, broker_epoch=epoch, next_producer_id=1000),
        mt.ProducerIdsRecord(broker_id=0, broker_epoch=epoch, next_producer_id=2000),
    ]
    with pytest.raises(StaleBrokerEpochError):
        harness.wait(harness.controller.allocate_producer_ids(0, epoch + 1))
    with pytest.raises(BrokerNotRegisteredError):
        harness.wait(harness.controller.allocate_producer_ids(5, 0))
