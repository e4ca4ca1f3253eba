"""Controller registration (KIP-919): the exact record, idempotence, the metadata.version gate, and the
active controller registering itself once the bootstrap has committed."""

from __future__ import annotations

import random
import time

import pytest

from kraftlake.controller import ControllerConfig, LocalMetadataLog, ManualClock, QuorumController
from kraftlake.controller.errors import InvalidRequestError, UnsupportedVersionError
from kraftlake.controller.registration import ControllerRegistrationRequest, new_incarnation_id
from kraftlake.controller.versions import SUPPORTED_FEATURES
from kraftlake.records import metadata_types as mt
from tests.controller.conftest import TIMEOUT, Harness, incarnation


def _request(controller_id: int, generation: int = 0) -> ControllerRegistrationRequest:
    return ControllerRegistrationRequest(
        controller_id, incarnation(100 + controller_id, generation),
        [("CONTROLLER", "localhost", 9090 + controller_id)],
        {"metadata.version": (7, 29), "kraft.version": (0, 1)},
    )


def test_register_controller_writes_one_record(harness: Harness) -> None:
    mark = harness.offset()
    harness.wait(harness.controller.register_controller(_request(2)))
    assert harness.records_after(mark) == [mt.RegisterControllerRecord(
        controller_id=2, incarnation_id=incarnation(102), zk_migration_ready=False,
        end_points=(mt.ControllerEndpoint(name="CONTROLLER", host="localhost", port=9092, security_protocol=0),),
        features=(
            mt.ControllerFeature(name="kraft.version", min_supported_version=0, max_supported_version=1),
            mt.ControllerFeature(name="metadata.version", min_supported_version=7, max_supported_version=29),
        ),
    )]
    registered = harness.image.cluster.controllers[2]
    assert registered.incarnation_id == incarnation(102) and registered.listeners[0].port == 9092


def test_same_incarnation_writes_nothing_a_new_one_replaces_it(harness: Harness) -> None:
    harness.wait(harness.controller.register_controller(_request(2)))
    mark = harness.offset()
    harness.wait(harness.controller.register_controller(_request(2)))
    assert harness.records_after(mark) == []
    harness.wait(harness.controller.register_controller(_request(2, generation=1)))
    [record] = harness.records_after(mark)
    assert record.incarnation_id == incarnation(102, 1)
    assert harness.image.cluster.controllers[2].incarnation_id == incarnation(102, 1)


def test_registration_is_refused_before_3_7(make_harness) -> None:
    h = make_harness(metadata_version="3.6")
    h.elect(1)
    with pytest.raises(UnsupportedVersionError, match=r"metadata\.version 15"):
        h.wait(h.controller.register_controller(_request(2)))


def test_a_bad_incarnation_is_refused(harness: Harness) -> None:
    with pytest.raises(InvalidRequestError, match="incarnation"):
        harness.wait(harness.controller.register_controller(ControllerRegistrationRequest(2, "not-a-uuid", [], {})))
    with pytest.raises(InvalidRequestError, match="port"):
        harness.wait(harness.controller.register_controller(
            ControllerRegistrationRequest(2, incarnation(102), [("CONTROLLER", "h", 70000)], {})
        ))


def test_the_active_controller_registers_itself_after_the_bootstrap() -> None:
    log = LocalMetadataLog(auto_commit=True)
    clock = ManualClock()
    request = ControllerRegistrationRequest(1, new_incarnation_id(), [("CONTROLLER", "127.0.0.1", 9091)],
                                            dict(SUPPORTED_FEATURES))
    controller = QuorumController(log, ControllerConfig(node_id=1, noop_interval_ms=0), clock=clock,
                                  rng=random.Random(7), background_tasks=False, registration=request).start()
    try:
        log.elect(1, clock.now_ms())
        controller.run_periodic_tasks().result(TIMEOUT)  # the bootstrap has committed by now
        controller.run_periodic_tasks().result(TIMEOUT)  # the registration was written after it
        kinds = [type(r.message) for b in log.committed_batches() if not b.is_control for r in b.records]
        assert kinds.count(mt.RegisterControllerRecord) == 1
        assert kinds.index(mt.RegisterControllerRecord) > kinds.index(mt.EndTransactionRecord)
        assert controller.committed_image.cluster.controllers[1].incarnation_id == request.incarnation_id
    finally:
        controller.close()


def test_a_standby_registers_through_the_active_controller() -> None:
    log = LocalMetadataLog(auto_commit=True)
    clock = ManualClock()

    def node(node_id: int, sender: object = None) -> QuorumController:
        request = ControllerRegistrationRequest(node_id, new_incarnation_id(),
                                                [("CONTROLLER", "127.0.0.1", 9090 + node_id)], dict(SUPPORTED_FEATURES))
        return QuorumController(log, ControllerConfig(node_id=node_id, noop_interval_ms=0), clock=clock,
                                rng=random.Random(node_id), background_tasks=False, registration=request,
                                registration_sender=sender).start()  # type: ignore[arg-type]

    active = node(1)
    standby = node(2, lambda request: active.register_controller(request).result(TIMEOUT))
    try:
        log.elect(1, clock.now_ms())
        deadline = time.monotonic() + TIMEOUT
        while len(standby.committed_image.cluster.controllers) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # both register on their own (the idle wakeup drives it): wait, generously
        controllers = standby.committed_image.cluster.controllers
        assert sorted(controllers) == [1, 2]
        assert controllers[2].listeners[0].port == 9092
    finally:
        standby.close()
        active.close()
