"""The broker simulator against a controller served over HTTP: it builds its cluster, runs a mixed
workload whose effects replay, and replays identically from the same seed."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kraftlake.brokersim.simulator import BrokerSimulator, SimulationConfig
from kraftlake.controller import ControllerConfig, LocalMetadataLog, ManualClock, QuorumController
from kraftlake.controller.admin_api import AdminServer
from kraftlake.controller.admin_client import AdminClient
from kraftlake.records import metadata_types as mt
from kraftlake.replay.loader import BatchLoader


@contextlib.contextmanager
def serve(session_timeout_ms: int) -> Iterator[tuple[LocalMetadataLog, QuorumController, AdminClient]]:
    log = LocalMetadataLog()
    controller = QuorumController(
        log, ControllerConfig(node_id=1, noop_interval_ms=0, delegation_token_secret_key="k",
                              session_timeout_ms=session_timeout_ms),
        rng=random.Random(3),
    ).start()
    server = AdminServer(controller).start()
    log.elect(1)
    try:
        yield log, controller, AdminClient([server.address], timeout_s=60)
    finally:
        server.close()
        controller.close()


@pytest.fixture
def served() -> Iterator[tuple[LocalMetadataLog, QuorumController, AdminClient]]:
    """Real time and a short session: crashed brokers get fenced, so their restarts are accepted."""
    with serve(session_timeout_ms=300) as served:
        yield served


def _workload_trace(seed: int) -> tuple[dict[str, int], list[str]]:
    log = LocalMetadataLog()
    controller = QuorumController(
        log, ControllerConfig(node_id=1, noop_interval_ms=0, delegation_token_secret_key="k"),
        clock=ManualClock(), rng=random.Random(3), background_tasks=False,
    ).start()
    server = AdminServer(controller).start()
    try:
        log.elect(1)
        report = BrokerSimulator(AdminClient([server.address]), SimulationConfig(steps=60, seed=seed)).run()
        types = [type(r.message).__name__ for b in log.committed_batches() for r in b.records
                 if type(r.message).__name__ != "UserScramCredentialRecord"]
        return report.actions, types
    finally:
        server.close()
        controller.close()


def test_builds_the_cluster_and_runs_a_mixed_workload(served) -> None:
    log, controller, client = served
    simulator = BrokerSimulator(client, SimulationConfig(brokers=4, topics=3, partitions=5, steps=150, seed=14))
    report = simulator.run()
    assert report.topics_created >= 3
    image = controller.committed_image
    assert len(image.cluster.brokers) == 4
    assert {"heartbeat", "alter-partition", "acl", "quota", "scram", "token", "producer-ids"} <= set(report.actions)
    loader = BatchLoader()
    for batch in log.committed_batches():
        loader.load_batch(batch)
    loader.flush()
    assert loader.image.topics == image.topics  # what the controller did is exactly what its log replays to


def test_after_the_storm_every_broker_is_back_and_every_partition_led() -> None:
    """A session of seconds: with the 300 ms of `served`, a loaded machine (CI) let sessions lapse while `settle`
    elected and caught followers up after the brokers' last heartbeat, and the image showed them fenced."""
    with serve(session_timeout_ms=3_000) as (_, controller, client):
        simulator = BrokerSimulator(client, SimulationConfig(brokers=4, topics=4, partitions=5, steps=200, seed=7))
        simulator.run()
        for broker in simulator.brokers[:2]:  # crashes and a lost disk, as the demo's workload leaves them
            simulator.fail_directory(broker.broker_id)
        simulator.brokers[2].epoch = None
        simulator.settle(timeout_s=60)
        image = controller.committed_image
    assert sorted(image.cluster.brokers) == [0, 1, 2, 3]
    assert not [b.broker_id for b in image.cluster.brokers.values() if b.fenced or b.in_controlled_shutdown]
    partitions = [(t.name, p, r) for t in image.topics.by_id.values() for p, r in t.partitions.items()]
    assert not [(name, p) for name, p, r in partitions if r.leader < 0], "every partition led"
    assert not [(name, p) for name, p, r in partitions if sorted(r.isr) != sorted(r.replicas)], "none under-replicated"


def test_same_seed_same_workload() -> None:
    assert _workload_trace(5) == _workload_trace(5)
    assert _workload_trace(5) != _workload_trace(6)


def test_big_topics_are_created_in_batches() -> None:
    """A session that outlasts the build: on a loaded machine, creating 1,000 partitions can take longer than
    the short session of `served`, and brokers fenced meanwhile refuse the next request."""
    with serve(session_timeout_ms=60_000) as (_, controller, client):
        simulator = BrokerSimulator(client, SimulationConfig(brokers=3, topics=1, partitions=2_500, steps=0,
                                                             max_partitions_per_request=1_000))
        simulator.build()
    assert simulator.report.refused == {}
    assert simulator.report.actions["create-partitions"] == 2
    assert controller.committed_image.topics.partition_count() == 2_500


class SlowAdmin:
    """Every operation but a heartbeat takes longer than a broker session, as big ones do at scale."""

    def __init__(self, admin: AdminClient, delay_s: float) -> None:
        self.admin = admin
        self.delay_s = delay_s

    def call(self, operation: str, body: dict[str, Any] | None = None) -> Any:
        if operation != "heartbeat":
            time.sleep(self.delay_s)
        return self.admin.call(operation, body)

    def describe(self) -> dict[str, Any]:
        return self.admin.describe()

    def describe_topic(self, name: str) -> dict[str, Any]:
        return self.admin.describe_topic(name)


def _fencings(log: LocalMetadataLog) -> int:
    return sum(1 for b in log.committed_batches() for r in b.records
               if type(r.message) is mt.BrokerRegistrationChangeRecord and r.message.fenced == 1)


@pytest.mark.parametrize("interval_ms, fenced", [(0, True), (100, False)])
def test_background_heartbeats_keep_brokers_alive_through_slow_operations(interval_ms: int, fenced: bool) -> None:
    log = LocalMetadataLog()
    controller = QuorumController(log, ControllerConfig(node_id=1, noop_interval_ms=0, session_timeout_ms=1_000),
                                  rng=random.Random(3)).start()
    server = AdminServer(controller).start()
    try:
        log.elect(1)
        config = SimulationConfig(brokers=2, topics=1, partitions=2, replication_factor=2, steps=0,
                                  heartbeat_interval_ms=interval_ms)
        BrokerSimulator(SlowAdmin(AdminClient([server.address], timeout_s=60), 1.5), config).run()
    finally:
        server.close()
        controller.close()
    assert (_fencings(log) > 0) is fenced  # a 1.5 s operation outlasts a 1 s session


@pytest.mark.parametrize("clean", [True, False], ids=["controlled-shutdown", "crash"])
def test_a_restart_after_a_controlled_shutdown_keeps_the_broker_eligible(served, clean: bool) -> None:
    """KIP-966 end to end: after a controlled shutdown the broker registers again with PreviousBrokerEpoch set
    to the epoch it held, so it stays in the ELR; after a crash it cannot say, and the controller drops it."""
    _, controller, client = served
    simulator = BrokerSimulator(client, SimulationConfig(brokers=3, topics=0, seed=5))
    simulator.build()
    client.call("create-topics", {"topics": [{
        "name": "ledger", "partitions": 1, "replication_factor": 3, "configs": {"min.insync.replicas": "3"},
    }]})
    simulator.heartbeat_all()
    leader = client.describe_topic("ledger")["partitions"]["0"]["leader"]
    simulator.alter_isr("ledger", 0, [leader])
    [member, other] = sorted(client.describe_topic("ledger")["partitions"]["0"]["elr"])
    broker = simulator.brokers[member]
    last_epoch = broker.epoch
    if clean:
        broker.shutting_down = True
        while broker.epoch is not None:
            simulator.heartbeat(broker)
    else:
        broker.epoch = None  # SIGKILL: no clean-shutdown epoch is left behind
    assert broker.clean_shutdown_epoch == (last_epoch if clean else -1)
    until = time.monotonic() + 0.4  # its session (300 ms) expires, so a new incarnation may register ...
    while time.monotonic() < until:
        for alive in simulator.brokers:
            if alive is not broker:
                simulator.heartbeat(alive)  # ... while the others keep theirs
        time.sleep(0.05)
    broker.incarnation += 1
    simulator.register(broker)
    partition = controller.committed_image.topics.by_name["ledger"].partitions[0]
    assert broker.epoch is not None and broker.clean_shutdown_epoch == -1  # the proof is used up
    assert partition.elr == ((member, other) if clean else (other,))
