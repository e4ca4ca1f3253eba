"""`make run`: the whole pipeline on the embedded default, end to end, then a report.

Local broker → three controller processes (Raft quorum + controller + admin API + publisher) → simulated
brokers and a mixed workload → a metadata transaction that commits, and one cut by killing the active
controller mid-way (its successor aborts it) → every controller registered, a partition reassignment, an ISR
shrink below min.insync.replicas (eligible leader replicas), a failed log directory → the storm passes: every
broker back, registered and unfenced, every partition with a leader → the streaming job drains the topic into
the warehouse → a report read back with Spark SQL and time travel, and where to look next. Its state lives
under the repo: `run/demo/` (quorum logs, configs, process logs), `run/broker/`, `warehouse/`,
`checkpoints/materialize/`; each run starts them afresh, and `make clean` removes them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kraftlake.brokersim.simulator import BrokerSimulator, SimulationConfig
from kraftlake.cli.broker import LocalBroker, stop_broker
from kraftlake.cli.local_cluster import LocalCluster
from kraftlake.controller.admin_client import AdminClient, AdminError
from kraftlake.controller.controller import MID_TRANSACTION_FAILPOINT
from kraftlake.records import decode_batch
from kraftlake.records import metadata_types as mt

if TYPE_CHECKING:
    from kraftlake.lake.reader import WarehouseReader

BIG_BATCH_RECORDS = 400  # a small batch cap, so that a big topic creation becomes a metadata transaction
MARKERS: dict[type, str] = {
    mt.BeginTransactionRecord: "begun",
    mt.EndTransactionRecord: "committed",
    mt.AbortTransactionRecord: "aborted",
}


class Demo:
    def __init__(self, repo: Path, say: Callable[[str], None] = print) -> None:
        self.repo = repo
        self.say = say
        self.warehouse = repo / "warehouse"
        self.checkpoint = repo / "checkpoints" / "materialize"
        self.broker = LocalBroker(repo / "run" / "broker")
        self.started = time.monotonic()

    def _step(self, text: str) -> None:
        self.say(f"[{time.monotonic() - self.started:6.1f}s] {text}")

    def run(self) -> None:
        root = self.repo / "run" / "demo"
        stop_broker(self.broker.data_dir)  # its topic holds an earlier run's log: start from nothing
        for path in (root, self.broker.data_dir, self.warehouse, self.checkpoint):
            shutil.rmtree(path, ignore_errors=True)
        self.broker.start()
        self._step(f"local broker on {self.broker.bootstrap_servers}")
        cluster = LocalCluster(root, self.broker, max_records_per_batch=BIG_BATCH_RECORDS, spare_controller=True)
        try:
            cluster.start()
            self._step(f"3 controller processes up, active: node {cluster.wait_for_controller()}")
            simulator = BrokerSimulator(cluster.admin, SimulationConfig(brokers=6, topics=10, partitions=6, seed=7))
            simulator.build()
            self._step("6 simulated brokers registered, 10 topics created")
            cluster.admin.call("create-topics", {"topics": [{"name": "orders", "partitions": 240}]})
            self._step("created topic orders: 240 partitions, one metadata transaction, committed")
            self._abort_a_transaction(cluster)
            self._change_the_voters(cluster)
            self._controllers(cluster)
            self._reassign(cluster, simulator)
            self._elr(cluster, simulator)
            self._directory_failure(cluster, simulator)
            for _ in range(300):
                simulator.step()
            self._step(f"mixed workload (ISR churn, crashes, reassignments, directory failures, configs, ACLs, quotas, "
                       f"SCRAM, producer ids): "
                       f"{sum(simulator.report.actions.values())} requests")
            unclean = simulator.settle()
            with simulator.keep_alive():  # no session expires before the controllers stop
                self._step("the storm passes: every broker that crashed, shut down or lost a disk restarted, caught "
                           "up and is unfenced; every follower is back in its ISR"
                           + (f"; {unclean} partitions left without an in-sync or eligible replica got a leader by "
                              "an unclean election" if unclean else ""))
                self._step(f"every batch up to offset {cluster.wait_published()} is in topic {cluster.topic}")
        finally:
            cluster.stop()
        self._materialize(cluster)
        self.broker.stop()
        self._step(f"done; the warehouse stays in {self.warehouse}")

    def _abort_a_transaction(self, cluster: LocalCluster) -> None:
        """The active controller dies half-way through writing a transaction; its successor aborts it."""
        leader = cluster.wait_for_controller()
        cluster.arm(MID_TRANSACTION_FAILPOINT)
        only_leader = AdminClient([cluster.admin_addresses[leader - 1]], timeout_s=5.0)
        with contextlib.suppress(AdminError, OSError):  # its controller dies before answering: the point
            only_leader.call("create-topics", {"topics": [{"name": "payments", "partitions": 1200}]})
        died = cluster.wait_for_death()  # the leader, unless leadership moved and the request followed it
        cluster.disarm()
        successor = cluster.wait_for_controller(excluding=died)
        cluster.start_controller(died)
        state = "exists (unexpected)" if cluster.topic_exists("payments") else "was never created"
        self._step(f"controller {died} died half-way through creating topic payments (1,200 partitions, a "
                   f"transaction); controller {successor} aborted it: the topic {state}")

    def _change_the_voters(self, cluster: LocalCluster) -> None:
        """KIP-853 at runtime: controller 4 starts as an observer and joins as a voter once caught up, then a
        follower voter leaves (it keeps running as an observer)."""
        cluster.start_controller(4)
        added = cluster.change_voters(True, 4)
        self._step(f"controller 4 caught up and joined the quorum: voters {added['voters']} "
                   f"(VotersRecord at offset {added['offset']})")
        active = cluster.wait_for_controller()
        leaving = next(node for node in (1, 2, 3) if node != active)
        removed = cluster.change_voters(False, leaving)
        self._step(f"controller {leaving} left the quorum: voters {removed['voters']} "
                   f"(VotersRecord at offset {removed['offset']})")

    def _controllers(self, cluster: LocalCluster, deadline_s: float = 30.0) -> None:
        """Every controller registers itself (KIP-919): standbys through the active one."""
        end = time.monotonic() + deadline_s
        registered: dict[str, object] = {}
        while time.monotonic() < end and len(registered) < len(cluster.admin_addresses):
            registered = cluster.admin.describe()["controllers"]
            time.sleep(0.2)
        self._step(f"controllers registered (RegisterControllerRecord): {', '.join(sorted(registered))}")

    def _reassign(self, cluster: LocalCluster, simulator: BrokerSimulator) -> None:
        """orders-0 moves to three other brokers; they catch up, join the ISR, and the reassignment completes."""
        before = cluster.admin.describe_topic("orders")["partitions"]["0"]
        target = [b.broker_id for b in simulator.brokers if b.broker_id not in before["replicas"]][:3]
        cluster.admin.call("alter-reassignments", {"reassignments": [
            {"topic": "orders", "partition": 0, "replicas": target}
        ]})
        ongoing = cluster.admin.call("list-reassignments", {})["orders"]["0"]
        simulator.catch_up_reassignments()
        after = cluster.admin.describe_topic("orders")["partitions"]["0"]
        self._step(f"reassigned orders-0 from {before['replicas']} to {target} (adding {ongoing['adding_replicas']}, "
                   f"removing {ongoing['removing_replicas']}); the new replicas caught up: replicas "
                   f"{after['replicas']}, leader {after['leader']}")

    def _elr(self, cluster: LocalCluster, simulator: BrokerSimulator) -> None:
        """A topic with min.insync.replicas=3 whose ISR shrinks to its leader: the others become its ELR."""
        cluster.admin.call("create-topics", {"topics": [{
            "name": "ledger", "partitions": 1, "replication_factor": 3, "configs": {"min.insync.replicas": "3"},
        }]})
        leader = cluster.admin.describe_topic("ledger")["partitions"]["0"]["leader"]
        simulator.alter_isr("ledger", 0, [leader])
        after = cluster.admin.describe_topic("ledger")["partitions"]["0"]
        self._step(f"ledger-0 (min.insync.replicas=3): leader {leader} shrank the ISR to {after['isr']}; "
                   f"eligible leader replicas {after['elr']} (KIP-966)")

    def _directory_failure(self, cluster: LocalCluster, simulator: BrokerSimulator) -> None:
        """A broker assigns its orders replicas to its first log directory, which then fails (KIP-858)."""
        leaders = Counter(p["leader"] for p in cluster.admin.describe_topic("orders")["partitions"].values())
        broker, led_before = leaders.most_common(1)[0]
        placed = simulator.assign_directories(broker, ["orders"])
        simulator.fail_directory(broker, 0)
        led = sum(p["leader"] == broker for p in cluster.admin.describe_topic("orders")["partitions"].values())
        self._step(f"broker {broker} assigned {placed} orders replicas to its first log directory, which failed: "
                   f"it now leads {led} orders partitions (was {led_before})")

    def _materialize(self, cluster: LocalCluster) -> None:
        from kraftlake.analytics.report import text_report, write_report
        from kraftlake.jobs.kafka_topic import read_messages
        from kraftlake.jobs.materialize import MaterializeConfig, local_spark, run
        from kraftlake.lake.reader import WarehouseReader
        from kraftlake.lake.warehouse import Warehouse

        config = MaterializeConfig(
            self.broker.bootstrap_servers, cluster.topic, str(self.warehouse), self.checkpoint,
            available_now=True, max_offsets_per_trigger=100,
        )
        spark = local_spark()
        run(config, spark)
        self._step(f"the streaming job drained the topic into {self.warehouse}\n")
        reader = WarehouseReader(Warehouse(self.warehouse))
        self.say(text_report(spark, reader))
        page = write_report(spark, reader, self.repo / "run" / "report.html")
        chunks = read_messages(spark, config.bootstrap_servers, config.topic, {}, cluster.topic_end())
        counts = transaction_markers(message.value for chunk in chunks for message in chunk)
        self.say(
            f"\nmetadata transactions in the log: {counts['begun']} begun, {counts['committed']} committed, "
            f"{counts['aborted']} aborted (aborted records are never visible)"
        )
        self.say(f"\n{end_state(reader)}\n\n{where_to_look(page, self.warehouse)}")


def end_state(reader: WarehouseReader) -> str:
    """How the cluster ended, as the warehouse's last image says: brokers registered and fenced, partitions,
    how many have no leader and how many are under-replicated."""
    last = reader.published_range()[1]
    tables = reader.image_at(last).tables
    fenced = tables["brokers"].column("fenced").to_pylist()
    partitions = tables["partitions"].select(["leader", "isr", "replicas"]).to_pylist()
    leaderless = sum(p["leader"] < 0 for p in partitions)
    under_replicated = sum(len(p["isr"]) < len(p["replicas"]) for p in partitions)
    return (f"the cluster at the last image (offset {last}): {len(fenced)} brokers registered, {sum(fenced)} fenced; "
            f"{len(partitions)} partitions, {leaderless} without a leader, {under_replicated} under-replicated")


def where_to_look(report: Path, warehouse: Path) -> str:
    """The report's path and three commands to try on the demo's warehouse."""
    at = os.path.relpath(warehouse)
    return "\n".join([
        f"the HTML report (open it in a browser): {report}",
        "three commands to try:",
        f"  .venv/bin/kraftlake history --warehouse {at} --table partitions --key orders-0   # the reassignment",
        f"  .venv/bin/kraftlake summary fencing_episodes --warehouse {at}   # when each broker was out, and why",
        f"  .venv/bin/kraftlake sql --warehouse {at} \"SELECT from_offset, topic_name, partition_id, isr, elr "
        "FROM partitions_history WHERE size(elr) > 0 ORDER BY from_offset LIMIT 5\"   # eligible leader replicas",
    ])


def transaction_markers(values: Iterable[bytes]) -> Counter[str]:
    """Begin/End/Abort records among the topic's values, each batch counted once (the topic may repeat one)."""
    seen: set[int] = set()
    counts: Counter[str] = Counter()
    for value in values:
        batch = decode_batch(value)
        if batch.base_offset in seen:
            continue
        seen.add(batch.base_offset)
        counts.update(MARKERS[type(r.message)] for r in batch.records if type(r.message) in MARKERS)
    return counts
