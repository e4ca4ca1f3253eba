"""Activation: the bootstrap transaction on an empty log, nothing on a non-empty one, dangling transactions."""

from __future__ import annotations

from kraftlake.controller import ControllerConfig, LocalMetadataLog, ManualClock, QuorumController
from kraftlake.records import metadata_types as mt
from tests.controller.conftest import Harness


def test_empty_log_gets_the_bootstrap_transaction(harness: Harness) -> None:
    records = harness.records_after(-1)
    assert records[0] == mt.BeginTransactionRecord(name="Bootstrap records")
    assert records[1] == mt.FeatureLevelRecord(name="metadata.version", feature_level=29)
    assert {r.name: r.feature_level for r in records[2:-1]} == {
        "eligible.leader.replicas.version": 1, "group.version": 1, "share.version": 1, "streams.version": 1,
        "transaction.version": 2,
    }
    assert records[-1] == mt.EndTransactionRecord()
    assert len(harness.log.committed_batches()) == 2  # the LeaderChange control batch, then one bootstrap batch
    assert harness.image.features.metadata_version == 29


def test_bootstrap_level_and_features_are_configurable(make_harness) -> None:
    h = make_harness(metadata_version="3.7", bootstrap_features={"group.version": 1})
    h.elect(1)
    assert h.image.features.metadata_version == 19
    assert dict(h.image.features.finalized) == {"group.version": 1}


def test_a_second_leader_does_not_bootstrap_again(harness: Harness) -> None:
    before = harness.records_after(-1)
    harness.elect(2)
    harness.elect(1)
    assert harness.records_after(-1) == before


def test_a_transaction_left_open_by_a_crashed_leader_is_aborted() -> None:
    clock = ManualClock()
    log = LocalMetadataLog()
    log.elect(9)
    log.append(1, [mt.BeginTransactionRecord(name="half"), mt.NoOpRecord()], {}, 0)  # epoch 1, led by node 9
    controller = QuorumController(log, ControllerConfig(node_id=1, noop_interval_ms=0), clock=clock,
                                  background_tasks=False).start()
    try:
        log.elect(1)
        controller.run_periodic_tasks().result(10)
        last = log.committed_batches()[-1]
        assert [type(r.message) for r in last.records] == [mt.AbortTransactionRecord]
        assert controller.committed_image.features.metadata_version is None  # no bootstrap on a non-empty log
    finally:
        controller.close()
