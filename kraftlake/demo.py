"""`make run`: the whole pipeline on the embedded default, end to end, then a report.

Local broker → three controller processes (Raft quorum + controller + admin API + publisher) → simulated
brokers and a mixed workload → a metadata transaction that commits, and one cut by killing the active
controller mid-way (its successor aborts it) → the streaming job drains the topic into the warehouse →
a report read back with Spark SQL and time travel. Its state lives under the repo: `run/demo/` (quorum
logs, configs, process logs), `run/broker/`, `warehouse/`, `checkpoints/materialize/`; each run starts
them afresh, and `make clean` removes them.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kraftlake.broker import LocalBroker
from quorum.controller.admin_client import AdminClient, AdminError
from quorum.processes import free_ports
from quorum.simulator import BrokerSimulator, SimulationConfig
from records import decode_batch
from records import metadata_types as mt

TOPIC = "kraftlake-metadata"
BIG_BATCH_RECORDS = 400  # small batch cap, so that a big topic creation becomes a metadata transaction


class Demo:
    def __init__(self, repo: Path, say: Callable[[str], None] = print) -> None:
        self.repo = repo
        self.say = say
        self.root = repo / "run" / "demo"
        self.warehouse = repo / "warehouse"
        self.checkpoint = repo / "checkpoints" / "materialize"
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        self.broker = LocalBroker(repo / "run" / "broker")

    def run(self) -> None:
        started = time.monotonic()
        self._reset()
        self.broker.start()
        self.say(f"[{self._clock(started)}] local broker on {self.broker.bootstrap_servers}")
        try:
            self._start_controllers()
            admin = AdminClient(self.admin_addresses)
            self._wait_for_controller(admin, excluding=None)
            self.say(f"[{self._clock(started)}] 3 controllers up, active: node {admin.describe()['leader_id']}")
            workload = SimulationConfig(brokers=6, topics=10, partitions=6, steps=250, seed=7)
            report = BrokerSimulator(admin, workload).run()
            self.say(f"[{self._clock(started)}] simulated workload: {sum(report.actions.values())} requests, "
                     f"{report.partitions_created} partitions")
            self._committed_transaction(admin)
            self._aborted_transaction(admin, started)
            BrokerSimulator(admin, SimulationConfig(brokers=6, topics=2, partitions=4, steps=80, seed=8)).run()
            self._wait_published(admin)
            self.say(f"[{self._clock(started)}] every committed batch is in topic {TOPIC}")
        finally:
            self._stop_controllers()
        self._materialize(started)
        self.broker.stop()
        self.say(f"[{self._clock(started)}] done; the warehouse stays in {self.warehouse}")

    @staticmethod
    def _clock(started: float) -> str:
        return f"{time.monotonic() - started:6.1f}s"

    # -- setup ------------------------------------------------------------------------------------------------

    def _reset(self) -> None:
        for path in (self.root, self.warehouse, self.checkpoint):
            shutil.rmtree(path, ignore_errors=True)
        self.root.mkdir(parents=True)
        raft_ports, admin_ports = free_ports(3), free_ports(3)
        self.admin_addresses = [f"127.0.0.1:{port}" for port in admin_ports]
        voters = "\n".join(f'{n} = "127.0.0.1:{port}"' for n, port in enumerate(raft_ports, start=1))
        (self.root / "quorum.toml").write_text(f'[quorum]\ndata_dir = "{self.root / "quorum"}"\n[voters]\n{voters}\n')
        admins = "\n".join(f'{n} = "{address}"' for n, address in enumerate(self.admin_addresses, start=1))
        (self.root / "controller.toml").write_text(
            f"[controller]\nmax_records_per_batch = {BIG_BATCH_RECORDS}\ndefault_replication_factor = 3\n"
            f"[admin.addresses]\n{admins}\n[publisher]\ntopic = \"{TOPIC}\"\n"
        )

    def _start_controllers(self) -> None:
        for node in (1, 2, 3):
            self._start_controller(node)

    def _start_controller(self, node: int) -> None:
        log = (self.root / f"controller-{node}.log").open("ab")
        self.processes[node] = subprocess.Popen(
            [sys.executable, "-m", "kraftlake.cli", "controller", "start", "--node-id", str(node),
             "--quorum-config", str(self.root / "quorum.toml"), "--config", str(self.root / "controller.toml"),
             "--bootstrap-servers", self.broker.bootstrap_servers],
            cwd=self.repo, stdout=log, stderr=subprocess.STDOUT,
        )

    def _stop_controllers(self) -> None:
        for node, process in list(self.processes.items()):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            del self.processes[node]

    def _wait_for_controller(self, admin: AdminClient, excluding: int | None, deadline_s: float = 60.0) -> int:
        """The active controller's node id, once one other than `excluding` has committed something."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            with contextlib.suppress(AdminError, OSError):
                view = admin.describe()
                if view["leader_id"] not in (None, excluding) and view["committed_offset"] >= 0:
                    return int(view["leader_id"])
            time.sleep(0.2)
        raise RuntimeError(f"no active controller within {deadline_s:.0f} s (see {self.root}/controller-*.log)")

    # -- the two transactions ---------------------------------------------------------------------------------

    def _committed_transaction(self, admin: AdminClient) -> None:
        admin.call("create-topics", {"topics": [{"name": "orders", "partitions": 240, "replication_factor": 3}]})
        self.say("created topic orders (240 partitions: one metadata transaction, committed)")

    def _aborted_transaction(self, admin: AdminClient, started: float) -> None:
        """Kill the active controller while a big creation's transaction is half-way: its successor aborts it."""
        for attempt in range(1, 6):
            name = f"payments-{attempt}"
            leader = int(admin.describe()["leader_id"])
            request = threading.Thread(target=self._ignore_failure, args=(admin, name), daemon=True)
            request.start()
            time.sleep(0.15 * attempt)
            self.processes[leader].send_signal(signal.SIGKILL)
            self.processes[leader].wait()
            request.join(timeout=60)
            new_leader = self._wait_for_controller(admin, excluding=leader)
            self._start_controller(leader)
            if not self._topic_exists(admin, name):
                self.say(f"[{self._clock(started)}] killed controller {leader} during topic {name}'s transaction; "
                         f"controller {new_leader} aborted it")
                return
            self.say(f"  (topic {name} committed before the kill; trying again)")
        self.say("  no transaction was caught half-way in 5 tries: the report shows no aborted one")

    @staticmethod
    def _ignore_failure(admin: AdminClient, name: str) -> None:
        with contextlib.suppress(AdminError, OSError):  # the controller it talked to is killed: the point
            admin.call("create-topics", {"topics": [{"name": name, "partitions": 6000, "replication_factor": 3}]})

    @staticmethod
    def _topic_exists(admin: AdminClient, name: str) -> bool:
        try:
            admin.describe_topic(name)
        except AdminError:
            return False
        return True

    def _wait_published(self, admin: AdminClient, deadline_s: float = 60.0) -> None:
        """Until the topic's last batch reaches the quorum's high watermark as it was when we asked."""
        target = int(admin.describe()["committed_offset"])
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if self._topic_last_offset() >= target:
                return
            time.sleep(0.5)
        raise RuntimeError(f"the publisher did not reach offset {target} within {deadline_s:.0f} s")

    def _topic_last_offset(self) -> int:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap_servers, "group.id": "kraftlake-demo"})
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
            if high <= low:
                return -1
            consumer.assign([TopicPartition(TOPIC, 0, high - 1)])
            message = consumer.poll(10)
            if message is None or message.error():
                return -1
            return decode_batch(message.value()).last_offset
        finally:
            consumer.close()

    # -- the streaming job and the report ------------------------------------------------------------------------

    def _materialize(self, started: float) -> None:
        from jobs.materialize import MaterializeConfig, local_spark, read_topic, run
        from jobs.report import report
        from jobs.warehouse import Warehouse

        config = MaterializeConfig(
            self.broker.bootstrap_servers, TOPIC, self.warehouse, self.checkpoint,
            available_now=True, max_offsets_per_trigger=300,
        )
        spark = local_spark()
        run(config, spark)
        self.say(f"[{self._clock(started)}] streaming job drained the topic into {self.warehouse}\n")
        self.say(report(spark, Warehouse(self.warehouse)))
        markers = _transaction_markers(value for _, value in read_topic(config, _topic_end(config)))
        self.say(f"\nmetadata transactions in the log: {markers['begin']} begun, {markers['end']} committed, "
                 f"{markers['abort']} aborted (aborted records are never visible)")


def _topic_end(config: Any) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": config.bootstrap_servers, "group.id": "kraftlake-demo"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(config.topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def _transaction_markers(values: Any) -> Counter[str]:
    """Begin/End/Abort records in the topic, each batch counted once (the topic may repeat batches)."""
    seen: set[int] = set()
    counts: Counter[str] = Counter()
    kinds = {mt.BeginTransactionRecord: "begin", mt.EndTransactionRecord: "end", mt.AbortTransactionRecord: "abort"}
    for value in values:
        batch = decode_batch(value)
        if batch.base_offset in seen:
            continue
        seen.add(batch.base_offset)
        for record in batch.records:
            kind = kinds.get(type(record.message))
            if kind:
                counts[kind] += 1
    return counts

