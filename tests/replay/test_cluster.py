"""Broker and controller registrations: ClusterDelta's epoch checks on fence, unfence, registration change
and unregister; registration replaces; a snapshot drops what it does not re-assert."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kraftlake.records import metadata_types as mt
from kraftlake.replay.cluster import BrokerRegistration, Endpoint, FeatureRange
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import MetadataImage, Provenance
from tests.replay.builders import apply_records, uuid


def register(broker_id: int, epoch: int, *, fenced: bool = True, **fields: Any) -> object:
    return mt.RegisterBrokerRecord(
        broker_id=broker_id,
        broker_epoch=epoch,
        incarnation_id=uuid(broker_id),
        end_points=(mt.BrokerEndpoint(name="PLAINTEXT", host=f"b{broker_id}", port=9092, security_protocol=0),),
        features=(mt.BrokerFeature(name="metadata.version", min_supported_version=7, max_supported_version=29),),
        rack=None,
        fenced=fenced,
        **fields,
    )


def broker(image: MetadataImage, broker_id: int) -> BrokerRegistration:
    return image.cluster.brokers[broker_id]


def test_register_broker_keeps_every_field() -> None:
    dirs = (uuid(9), uuid(8))
    image = apply_records([register(1, 10, fenced=False, in_controlled_shutdown=True, log_dirs=dirs,
                                    is_migrating_zk_broker=True, cordoned_log_dirs=(uuid(9),))])
    assert broker(image, 1) == BrokerRegistration(
        broker_id=1, epoch=10, incarnation_id=uuid(1),
        listeners=(Endpoint("PLAINTEXT", "b1", 9092, 0),),
        supported_features=(FeatureRange("metadata.version", 7, 29),),
        rack=None, fenced=False, in_controlled_shutdown=True, is_migrating_zk_broker=True,
        directories=tuple(sorted(dirs)), cordoned_directories=(uuid(9),),
    )


def test_a_new_registration_replaces_the_old_one() -> None:
    image = apply_records([register(1, 20, fenced=True)], apply_records([register(1, 10, fenced=False)]))
    assert (broker(image, 1).epoch, broker(image, 1).fenced) == (20, True)


@pytest.mark.parametrize(
    ("record", "fenced"),
    [(mt.FenceBrokerRecord(id=1, epoch=10), True), (mt.UnfenceBrokerRecord(id=1, epoch=10), False)],
    ids=["fence", "unfence"],
)
def test_fence_and_unfence_with_the_current_epoch(record: object, fenced: bool) -> None:
    before = apply_records([register(1, 10, fenced=not fenced, in_controlled_shutdown=True)])
    after = apply_records([record], before)
    assert broker(after, 1) == dataclasses.replace(broker(before, 1), fenced=fenced)


@pytest.mark.parametrize(
    ("record", "action"),
    [
        (mt.FenceBrokerRecord(id=1, epoch=11), "fence"),
        (mt.UnfenceBrokerRecord(id=1, epoch=11), "unfence"),
        (mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=11, fenced=1), "change"),
        (mt.UnregisterBrokerRecord(broker_id=1, broker_epoch=11), "unregister"),
    ],
    ids=["fence", "unfence", "change", "unregister"],
)
def test_a_stale_epoch_is_refused(record: object, action: str) -> None:
    before = apply_records([register(1, 10)])
    with pytest.raises(ReplayError, match=f"Tried to {action} broker 1, but the given epoch, 11, did not match "
                                          f"the current broker epoch, 10."):
        apply_records([record], before)


@pytest.mark.parametrize(
    "record",
    [
        mt.FenceBrokerRecord(id=2, epoch=10),
        mt.UnfenceBrokerRecord(id=2, epoch=10),
        mt.BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=10, fenced=-1),
        mt.UnregisterBrokerRecord(broker_id=2, broker_epoch=10),
    ],
    ids=["fence", "unfence", "change", "unregister"],
)
def test_an_unknown_broker_is_refused(record: object) -> None:
    with pytest.raises(ReplayError, match="broker 2, but that broker was not registered"):
        apply_records([record], apply_records([register(1, 10)]))


def test_epoch_checks_see_a_registration_earlier_in_the_same_delta() -> None:
    image = apply_records([register(1, 10), register(1, 12), mt.UnfenceBrokerRecord(id=1, epoch=12)])
    assert (broker(image, 1).epoch, broker(image, 1).fenced) == (12, False)


@pytest.mark.parametrize(
    ("fenced", "shutdown", "expected"),
    [(-1, 0, (False, False)), (0, 0, (True, False)), (1, 0, (True, False)), (0, 1, (True, True)),
     (-1, 1, (False, True))],
)
def test_registration_change_values(fenced: int, shutdown: int, expected: tuple[bool, bool]) -> None:
    before = apply_records([register(1, 10, fenced=True)])
    after = apply_records(
        [mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=fenced,
                                           in_controlled_shutdown=shutdown)], before)
    assert (broker(after, 1).fenced, broker(after, 1).in_controlled_shutdown) == expected


def test_registration_change_fence_from_unfenced() -> None:
    before = apply_records([register(1, 10, fenced=False)])
    after = apply_records([mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=1)], before)
    assert broker(after, 1).fenced


def test_registration_change_log_dirs_empty_means_unchanged() -> None:
    dirs = (uuid(5),)
    before = apply_records([register(1, 10, log_dirs=dirs)])
    unchanged = apply_records([mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10)], before)
    assert broker(unchanged, 1) == broker(before, 1)
    new_dirs = (uuid(7), uuid(6))
    changed = apply_records([mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, log_dirs=new_dirs)],
                            before)
    assert broker(changed, 1).directories == tuple(sorted(new_dirs))


def test_cordoned_directories_are_unknown_until_reported_then_change_only_when_sent() -> None:
    """KIP-1066 (metadata.version 4.3-IV0), as Kafka 4.4's BrokerRegistration: None until a record carries
    them; a change without them (null) leaves them; an empty list is a change (a 4.4 cluster writes one per
    broker right after its metadata.version upgrade); the order sent is kept (Kafka does not sort them)."""
    before = apply_records([register(1, 10)])
    assert broker(before, 1).cordoned_directories is None
    reported = apply_records([mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, cordoned_log_dirs=())],
                             before)
    assert broker(reported, 1).cordoned_directories == ()
    cordoned = (uuid(7), uuid(6))
    changed = apply_records([mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10,
                                                               cordoned_log_dirs=cordoned)], reported)
    assert broker(changed, 1).cordoned_directories == cordoned
    unchanged = apply_records([mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=-1)], changed)
    assert broker(unchanged, 1).cordoned_directories == cordoned
    registered = apply_records([register(1, 11, cordoned_log_dirs=(uuid(8),))], unchanged)
    assert broker(registered, 1).cordoned_directories == (uuid(8),)


@pytest.mark.parametrize(("fenced", "shutdown"), [(2, 0), (-2, 0), (0, 2), (0, -1)])
def test_registration_change_invalid_values_are_refused(fenced: int, shutdown: int) -> None:
    with pytest.raises(ReplayError, match="Invalid"):
        apply_records([mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=fenced,
                                                         in_controlled_shutdown=shutdown)],
                      apply_records([register(1, 10)]))


def test_unregister_removes_the_broker() -> None:
    before = apply_records([register(1, 10), register(2, 20)])
    after = apply_records([mt.UnregisterBrokerRecord(broker_id=1, broker_epoch=10)], before)
    assert list(after.cluster.brokers) == [2]
    assert after.cluster.brokers[2] is before.cluster.brokers[2]


def test_register_controller_replaces_and_is_kept_apart_from_brokers() -> None:
    def controller(incarnation: int) -> object:
        return mt.RegisterControllerRecord(
            controller_id=3000, incarnation_id=uuid(incarnation), zk_migration_ready=False,
            end_points=(mt.ControllerEndpoint(name="CONTROLLER", host="c", port=9093, security_protocol=0),),
            features=(mt.ControllerFeature(name="kraft.version", min_supported_version=0, max_supported_version=1),),
        )

    image = apply_records([controller(1), controller(2)])
    assert list(image.cluster.controllers) == [3000]
    registration = image.cluster.controllers[3000]
    assert registration.incarnation_id == uuid(2)
    assert registration.listeners == (Endpoint("CONTROLLER", "c", 9093, 0),)
    assert registration.supported_features == (FeatureRange("kraft.version", 0, 1),)
    assert not image.cluster.brokers
    assert not image.cluster.is_empty()


def test_cordoned_directories_null_until_reported_then_changed_by_a_non_null_list() -> None:
    """Kafka 4.4 (RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3): null means "not reported" in a
    registration and "no change" in a change; an empty list uncordons every directory."""
    dirs = (uuid(9), uuid(8))
    image = apply_records([register(1, 10, log_dirs=dirs)])
    assert broker(image, 1).cordoned_directories is None

    def change(cordoned: tuple[str, ...] | None) -> object:
        return mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, cordoned_log_dirs=cordoned)

    steps = [(change(()), ()), (change((uuid(9), uuid(8))), (uuid(9), uuid(8))), (change(None), (uuid(9), uuid(8))),
             (change((uuid(8),)), (uuid(8),))]
    for record, expected in steps:
        image = apply_records([record], image)
        assert broker(image, 1).cordoned_directories == expected, record


def test_unregister_controller_removes_only_that_controller() -> None:
    """Kafka 4.4's UnregisterControllerRecord (api key 29); an unknown id changes nothing, as in Kafka."""
    before = apply_records([mt.RegisterControllerRecord(controller_id=c, incarnation_id=uuid(c)) for c in (5, 6)])
    after = apply_records([mt.UnregisterControllerRecord(controller_id=5),
                           mt.UnregisterControllerRecord(controller_id=7)], before)
    assert list(after.cluster.controllers) == [6]
    assert after.cluster.controllers[6] is before.cluster.controllers[6]


def test_finish_snapshot_removes_registrations_not_reasserted() -> None:
    before = apply_records([
        register(1, 10), register(2, 20),
        mt.RegisterControllerRecord(controller_id=5, incarnation_id=uuid(5)),
    ])
    delta = MetadataDelta(before)
    delta.replay(register(2, 21))
    delta.finish_snapshot()
    after = delta.apply(Provenance())
    assert list(after.cluster.brokers) == [2]
    assert after.cluster.brokers[2].epoch == 21
    assert not after.cluster.controllers
