"""Write → commit → complete, failover, the NotController error, aborted transactions and idle NoOps."""

from __future__ import annotations

import pytest

from kraftlake.controller import NewTopic, NotControllerError, replication
from kraftlake.controller.context import ControllerResult
from kraftlake.controller.errors import InternalControllerError
from kraftlake.records import metadata_types as mt
from tests.controller.conftest import Harness


def test_a_request_completes_only_once_committed(harness: Harness) -> None:
    harness.register(0)
    harness.log.auto_commit = False
    future = harness.controller.create_topics([NewTopic("slow", 1, 1)])
    reads_wait = harness.controller.run_periodic_tasks()  # a request that writes nothing queues behind it
    with pytest.raises(TimeoutError):
        future.result(0.3)
    assert not reads_wait.done()
    assert "slow" not in harness.image.topics.by_name
    harness.log.commit()
    assert harness.wait(future)["slow"].error is None
    harness.wait(reads_wait)
    assert "slow" in harness.image.topics.by_name


def test_losing_leadership_fails_pending_requests_and_drops_uncommitted_state(harness: Harness) -> None:
    harness.register(0)
    harness.log.auto_commit = False
    pending = harness.controller.create_topics([NewTopic("lost", 1, 1)])
    harness.log.elect(2)  # node 2 wins: the uncommitted topic creation is gone from the log
    with pytest.raises(NotControllerError) as caught:
        harness.wait(pending)
    assert caught.value.leader_id == 2 and caught.value.leader_address == "127.0.0.1:9702"
    assert "node 2 at 127.0.0.1:9702" in str(caught.value)
    with pytest.raises(NotControllerError):
        harness.wait(harness.controller.create_topics([NewTopic("lost", 1, 1)]))
    harness.log.auto_commit = True
    harness.elect(1)
    outcome = harness.wait(harness.controller.create_topics([NewTopic("lost", 1, 1)]))
    assert outcome["lost"].error is None  # the old attempt left nothing behind


def test_a_standby_names_the_leader(harness: Harness) -> None:
    harness.log.elect(7)
    with pytest.raises(NotControllerError, match="node 7"):
        harness.wait(harness.controller.delete_topics(["x"]))
    harness.log.elect(None)
    with pytest.raises(NotControllerError, match="no controller is known"):
        harness.wait(harness.controller.delete_topics(["x"]))


def test_an_operation_failing_between_batches_writes_an_abort(make_harness, monkeypatch) -> None:
    h = make_harness(max_records_per_batch=10)
    h.elect(1)
    h.register(0)

    create_topics = replication.create_topics

    def broken_create(ctx, topics):
        good = create_topics(ctx, topics)
        topic_id = good.response["half"].topic_id
        assert topic_id is not None
        bad = mt.PartitionChangeRecord(partition_id=99, topic_id=topic_id, isr=(0,))
        return ControllerResult([*good.records, bad], good.response)

    monkeypatch.setattr(replication, "create_topics", broken_create)
    mark = h.offset()
    with pytest.raises(InternalControllerError, match="wrote nothing"):
        h.wait(h.controller.create_topics([NewTopic("half", 20, 1)]))
    records = h.records_after(mark)
    assert type(records[0]) is mt.BeginTransactionRecord
    assert type(records[-1]) is mt.AbortTransactionRecord
    assert len(records) == 10 + 10 + 1  # two batches (the first opens with Begin) replayed, then the Abort
    assert "half" not in h.image.topics.by_name
    monkeypatch.undo()
    assert h.wait(h.controller.create_topics([NewTopic("half", 20, 1)]))["half"].error is None


def test_noop_records_when_idle(make_harness) -> None:
    h = make_harness(noop_interval_ms=500)
    h.elect(1)
    mark = h.offset()
    h.wait(h.controller.run_periodic_tasks())
    assert h.records_after(mark) == []  # just written: not idle
    h.clock.advance(500)
    h.wait(h.controller.run_periodic_tasks())
    assert h.records_after(mark) == [mt.NoOpRecord()]
