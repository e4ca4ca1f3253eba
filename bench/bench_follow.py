"""`kraftlake follow` against a real 3-node Apache Kafka 4.4 cluster (`tests.harness.kafka_cluster`), the metadata
topic on the same cluster's brokers, the follower as its own process (as users run it).

(1) Controller commit → image queryable: a CreateTopics call returns once the controller committed it; the
time until the follower's message holding its TopicRecord is consumed from the topic, and then until the
streaming job's driver (`kraftlake.jobs.materialize.MicroBatchWriter`, fed directly, one micro-batch per message: no
Spark) has published the image holding it. The job's trigger adds its own wait on top (up to the interval:
half of it on average, 0.5 s with a 1 s trigger).
(2) The follower's CPU (share of one core) and RSS while the cluster is idle, and under churn (topics created
and deleted back to back).
(3) Resume after the active controller is SIGKILLed: from the kill until the first batch of the new leader's
epoch is in the topic.

Wall-clock times on a machine shared with other work: the load average is noted.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench import row
from kraftlake.jobs.materialize import MaterializeConfig, MicroBatchWriter, TopicMessage
from kraftlake.records import decode_batch
from kraftlake.records import metadata_types as mt
from kraftlake.records.topic import message_offset, message_value
from tests.harness.kafka_cluster import KafkaCluster

REPO = Path(__file__).resolve().parents[1]
CREATES = 20
SAMPLE_S = 20.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Watcher(threading.Thread):
    """Consumes the metadata topic as it grows: when each topic name's TopicRecord arrived, and each message."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.arrived: dict[str, float] = {}
        self.epochs: dict[int, float] = {}  # leader epoch -> when its first batch arrived
        self.messages: list[TopicMessage] = []
        self.stop = threading.Event()
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                                   "enable.auto.commit": False, "fetch.wait.max.ms": 10})
        self._consumer.assign([TopicPartition(topic, 0, 0)])

    def run(self) -> None:
        while not self.stop.is_set():
            message = self._consumer.poll(0.05)
            if message is None or message.error():
                continue
            now = time.monotonic()
            value = message_value(message)
            self.messages.append(TopicMessage(message_offset(message), message.key(), value))
            batch = decode_batch(value)
            self.epochs.setdefault(batch.partition_leader_epoch, now)
            for record in batch.records:
                if isinstance(record.message, mt.TopicRecord):
                    self.arrived.setdefault(record.message.name, now)
        self._consumer.close()


def follower(cluster: KafkaCluster, topic: str) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "kraftlake", "follow", "--bootstrap-controllers", cluster.bootstrap_controllers,
            "--bootstrap-servers", cluster.bootstrap_servers, "--topic", topic, "--log-interval", "5"]
    return subprocess.Popen(args, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def usage(pid: int, seconds: float, work: Any = None) -> tuple[float, float]:
    """(share of one core, RSS in MiB) of `pid` over `seconds`, while `work()` runs in a loop when given."""
    def cpu() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime

    start_cpu, started = cpu(), time.monotonic()
    while time.monotonic() - started < seconds:
        if work is None:
            time.sleep(0.5)
        else:
            work()
    share = (cpu() - start_cpu) / CLOCK_TICKS / (time.monotonic() - started)
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmRSS:")) / 1024
    return share, rss


def run() -> list[dict[str, Any]]:
    load = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-follow-") as root, KafkaCluster(Path(root) / "cluster") as cluster:
        topic = f"bench-follow-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        process = follower(cluster, topic)
        watcher = Watcher(cluster.bootstrap_servers, topic)
        try:
            time.sleep(5)  # the follower creates the topic and catches up
            watcher.start()
            rows += latency(admin, watcher, MaterializeConfig(cluster.bootstrap_servers, topic,
                                                              str(Path(root) / "warehouse"), Path(root) / "unused",
                                                              idle_publish_seconds=0.0, coalesce_backlog=False))
            idle = usage(process.pid, SAMPLE_S)
            churn_names = iter(range(1_000_000))

            def churn() -> None:
                name = f"churn-{next(churn_names)}"
                admin.create_topics([NewTopic(name, 3, 1)])[name].result(30)
                admin.delete_topics([name])[name].result(30)

            busy = usage(process.pid, SAMPLE_S, churn)
            rows += [
                row("follower CPU, idle cluster", f"{idle[0] * 100:.1f}", "% of a core"),
                row("follower RSS, idle cluster", f"{idle[1]:.0f}", "MiB"),
                row("follower CPU, topics created and deleted back to back", f"{busy[0] * 100:.1f}", "% of a core"),
                row("follower RSS, under churn", f"{busy[1]:.0f}", "MiB"),
            ]
            rows.append(resume(cluster, watcher))
        finally:
            watcher.stop.set()
            process.send_signal(signal.SIGTERM)
            process.wait(60)
    rows.append(row("load average (1 min) at the start / end", f"{load:.1f} / {os.getloadavg()[0]:.1f}", ""))
    return rows


def latency(admin: AdminClient, watcher: Watcher, config: MaterializeConfig) -> list[dict[str, Any]]:
    in_topic: list[float] = []
    queryable: list[float] = []
    writer = MicroBatchWriter(config, None)
    done = 0
    for index in range(CREATES):
        name = f"latency-{index}"
        admin.create_topics([NewTopic(name, 3, 1)])[name].result(30)
        committed = time.monotonic()
        while name not in watcher.arrived:
            time.sleep(0.005)
        in_topic.append(watcher.arrived[name] - committed)
        messages = watcher.messages[done:]
        done += len(messages)
        writer.write(messages)
        queryable.append(time.monotonic() - committed)
        time.sleep(0.3)
    return [
        row("CreateTopics committed → in the topic, p50 / p95",
            f"{statistics.median(in_topic):.3f} / {quantile(in_topic, 0.95):.3f}", "s", f"{CREATES} topics"),
        row("CreateTopics committed → image published (driver, no trigger wait), p50 / p95",
            f"{statistics.median(queryable):.3f} / {quantile(queryable, 0.95):.3f}", "s",
            "add the job's trigger: ≤ 1 s with a 1 s trigger"),
    ]


def quantile(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, round(q * (len(values) - 1)))]


def resume(cluster: KafkaCluster, watcher: Watcher) -> dict[str, Any]:
    old = cluster.active_controller()
    epochs = set(watcher.epochs)
    killed = time.monotonic()
    cluster.kill(old)
    try:
        deadline = killed + 120
        while not set(watcher.epochs) - epochs:
            assert time.monotonic() < deadline, "no batch of a new epoch reached the topic"
            time.sleep(0.01)
        new_epoch = min(set(watcher.epochs) - epochs)
        took = watcher.epochs[new_epoch] - killed
    finally:
        cluster.restart(old)
    return row("active controller SIGKILLed → the new leader's first batch in the topic", f"{took:.2f}", "s",
               "includes Kafka's election (controller.quorum.fetch.timeout.ms)")


if __name__ == "__main__":
    for result in run():
        print(result)
