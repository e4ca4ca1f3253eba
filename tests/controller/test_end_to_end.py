"""End to end on loopback: three `kraftlake controller start` processes (quorum, controller, publisher,
snapshots) and the local broker, driven by `kraftlake simulate`. During the workload the leader is
SIGKILLed (and restarted) and the broker crashes (SIGKILL, losing its last second of acknowledged writes) and
comes back. Afterwards the topic, read as a consumer reads it, must be the quorum's committed log: the same
batches, byte for byte, in order, with no gap and nothing that was not committed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from kraftlake.bridge.publisher import decode_key
from kraftlake.cli.broker import LocalBroker
from kraftlake.raft.log import LOG_DIR_NAME
from kraftlake.raft.server import describe_quorum
from kraftlake.records import MetadataLogDir, decode_batch, scan_batches
from kraftlake.records.topic import message_value
from tests.harness.processes import REPO, ControllerProcesses

pytestmark = pytest.mark.integration
DEADLINE_S = 60.0
SNAPSHOT_BYTES = 16 * 1024  # small: several snapshots are taken while the prefix is held for the publisher


def wait_for(condition: Callable[[], bool], what: str, deadline_s: float = DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def read_topic(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    """(key, value) of every message in the topic, in topic order."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"e2e-{uuid.uuid4().hex}", "enable.auto.commit": False,
    })
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)
        consumer.assign([TopicPartition(topic, 0, low)])
        messages: list[tuple[int, bytes]] = []
        while len(messages) < high - low:
            message = consumer.poll(30)
            assert message is not None and message.error() is None, message and message.error()
            messages.append((decode_key(message.key()), message_value(message)))
        return messages
    finally:
        consumer.close()


class ConsumerView:
    """The batches a consumer applies, as the streaming job does: in base-offset order, a duplicate (a base
    offset seen before) dropped, a batch beyond a gap held until the gap is filled."""

    def __init__(self, messages: list[tuple[int, bytes]]) -> None:
        self.applied: list[bytes] = []
        self.end = 0  # the next offset the consumer expects
        self.held: dict[int, bytes] = {}
        self.duplicates = 0
        seen: dict[int, bytes] = {}
        for key, value in messages:
            batch = decode_batch(value)
            assert key == batch.base_offset, "the key is the batch's base offset"
            if key in seen:
                assert seen[key] == value, f"a duplicate at {key} must be the same whole batch"
            seen[key] = value
            if batch.last_offset < self.end:
                self.duplicates += 1
            elif key == self.end:
                self._apply(value)
                while (unblocked := self.held.pop(self.end, None)) is not None:
                    self._apply(unblocked)
            else:
                assert key > self.end, f"a batch at {key} straddles the expected offset {self.end}"
                self.held[key] = value

    def _apply(self, value: bytes) -> None:
        self.applied.append(value)
        self.end = decode_batch(value).last_offset + 1


def high_watermark(quorum: ControllerProcesses) -> int:
    return int(asyncio.run(describe_quorum(quorum.config, timeout=2.0))["highWatermark"])


def node_log(node_dir: Path, end: int) -> list[bytes]:
    """The exact bytes of every batch a node's `__cluster_metadata-0` holds below `end`, in offset order."""
    out: list[bytes] = []
    for segment in MetadataLogDir(node_dir / LOG_DIR_NAME).segments():
        data = segment.read_bytes()
        for header in scan_batches(data, str(segment)):
            if header.base_offset >= end:
                return out
            out.append(data[header.position:header.position + header.size_in_bytes])
    return out


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalBroker]:
    """A broker of this test's own: it is crashed and restarted mid-test."""
    own = LocalBroker(tmp_path / "broker").start()
    yield own
    own.stop()


def test_the_topic_is_the_committed_log_through_leader_and_broker_crashes(
    tmp_path: Path, broker: LocalBroker
) -> None:
    topic = f"metadata-{uuid.uuid4().hex[:10]}"
    quorum = ControllerProcesses(
        tmp_path, broker.bootstrap_servers, topic,
        quorum="segment_bytes = 1073741824",  # one segment, never deleted: the logs are compared at the end
        controller=f"snapshot_max_new_record_bytes = {SNAPSHOT_BYTES}",
    )
    quorum.start_all()
    workload: subprocess.Popen[bytes] | None = None
    try:
        first_leader = int(quorum.wait_for_leader()["leaderId"])
        addresses = ",".join(quorum.admin_addresses[node] for node in sorted(quorum.admin_addresses))
        with (tmp_path / "simulate.out").open("wb") as out:
            workload = subprocess.Popen(
                [sys.executable, "-m", "kraftlake.cli.main", "simulate", "--controllers", addresses, "--brokers", "6",
                 "--topics", "20", "--partitions", "6", "--steps", "1000", "--seed", "11",
                 # heartbeats between steps only would let sessions lapse while a loaded machine elects a leader
                 "--heartbeat-interval-ms", "500"],
                cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
            )
        wait_for(lambda: high_watermark(quorum) > 200, "the workload to get going")
        quorum.kill(first_leader)
        second_leader = int(quorum.wait_for_leader(excluding=first_leader)["leaderId"])
        quorum.start(first_leader)
        time.sleep(2.0)
        assert workload.poll() is None, ("the broker must crash during the workload: "
                                         + (tmp_path / "simulate.out").read_text()[-3000:])
        broker.kill()  # SIGKILL mid-workload: the publisher must resume from the topic's tail
        at_broker_crash = high_watermark(quorum)
        time.sleep(1.0)
        broker.start()
        assert workload.wait(timeout=DEADLINE_S) == 0, (tmp_path / "simulate.out").read_text()[-3000:]

        # Everything committed by now must reach the topic, contiguous, with no batch still held.
        target = high_watermark(quorum)
        view = ConsumerView([])

        def caught_up() -> bool:
            nonlocal view
            try:
                view = ConsumerView(read_topic(broker.bootstrap_servers, topic))
            except KafkaException:
                return False
            return view.end >= target and not view.held

        wait_for(caught_up, f"the topic to reach offset {target}")
        assert view.end <= high_watermark(quorum), "the topic holds a batch that is not committed"
        snapshots = {
            node: sorted(path.name for path in (quorum.config.node_dir(node) / LOG_DIR_NAME).glob("*.checkpoint"))
            for node in quorum.config.voters
        }
    finally:
        if workload is not None and workload.poll() is None:
            workload.kill()
            workload.wait()
        exits = {node: quorum.stop(node) for node in list(quorum.processes)}

    assert exits == {node: 0 for node in quorum.config.voters}, exits  # SIGTERM: a clean exit...
    for node in quorum.config.voters:
        assert "Traceback" not in quorum.output(node), quorum.output(node)[-3000:]  # ... and no traceback
    assert any(snapshots.values()), "the workload was meant to trigger snapshots"
    assert second_leader != first_leader
    logs = {node: node_log(quorum.config.node_dir(node), view.end) for node in quorum.config.voters}
    agreeing = [node for node, batches in logs.items() if batches == view.applied]
    assert len(agreeing) >= 2, "a majority of the nodes must hold exactly the batches of the topic"
    assert view.end > at_broker_crash
