"""The local Kafka broker and the tests' Kafka cluster: how fast they start and how much memory they hold.

(1) The local broker (`kraftlake.cli.broker.LocalBroker`, one Apache Kafka 4.4.0 node, broker + controller):
the first start (storage formatted by Kafka's storage tool, then the JVM) and restarts on the same data, each
timed from the launch to the first answered metadata request listing the broker; resident memory (RSS) after
5 s idle; a clean stop. The JVM options of `kraftlake.cli.kafka_node.NODE_JVM_OPTIONS` against variants (C2
allowed, G1), restarts on one data dir, so the choice is measured, not guessed.
(2) The tests' cluster (`tests.harness.kafka_cluster`): three broker+controller JVMs formatted with
`--initial-controllers` and started together, until every broker is unfenced; their RSS; one Kafka tool run
(`kafka-topics --list`, a JVM each).

Wall-clock times on a machine shared with other work: the load average is noted.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import row
from kraftlake.cli.broker import LocalBroker
from kraftlake.cli.kafka_node import NODE_JVM_OPTIONS, KafkaNode
from tests.harness.kafka_cluster import KafkaCluster

RESTARTS = 5
VARIANT_RESTARTS = 3
IDLE_S = 5.0
VARIANTS = {
    "C1 only (default)": NODE_JVM_OPTIONS,
    "C2 allowed": tuple(option for option in NODE_JVM_OPTIONS if "TieredStopAtLevel" not in option),
    "G1, C2 allowed": tuple(
        option for option in NODE_JVM_OPTIONS if "TieredStopAtLevel" not in option and "SerialGC" not in option
    ),
}


def rss_mb(pid: int | None) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


@contextmanager
def scratch() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="kraftlake-bench-broker-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def timed(action: Any) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def local_broker(root: Path) -> list[dict[str, Any]]:
    broker = LocalBroker(root / "broker")
    first = timed(broker.start)
    try:
        time.sleep(IDLE_S)
        rss = rss_mb(broker.pid)
        stop = timed(broker.stop)
        restarts = []
        for _ in range(RESTARTS):
            restarts.append(timed(broker.start))
            broker.stop()
    finally:
        broker.stop()
    return [
        row("local broker: first start (format + start)", first),
        row("local broker: restart to first metadata answer", statistics.median(restarts),
            notes=f"median of {RESTARTS}: {', '.join(f'{s:.1f}' for s in restarts)}"),
        row("local broker: RSS after start-up, idle", rss, "MB", f"after {IDLE_S:g} s idle, -Xmx256m"),
        row("local broker: clean stop (SIGTERM)", stop),
    ]


def jvm_variants(root: Path) -> list[dict[str, Any]]:
    """Restarts of one formatted node under each set of JVM options."""
    broker = LocalBroker(root / "variants").start()
    broker.stop()
    rows = []
    for name, options in VARIANTS.items():
        node = KafkaNode(broker.node.data_dir, broker_port=broker.port, properties=broker.node.properties,
                         jvm_options=options)  # fmt: skip
        seconds, memory = restarts_of(node, VARIANT_RESTARTS)
        rows.append(row(f"JVM {name}: restart", statistics.median(seconds),
                        notes=f"median of {VARIANT_RESTARTS}; RSS at ready {statistics.median(memory):.0f} MB; "
                              f"{' '.join(options)}"))  # fmt: skip
    return rows


def restarts_of(node: KafkaNode, count: int) -> tuple[list[float], list[float]]:
    seconds, memory = [], []
    for _ in range(count):
        seconds.append(timed(node.start))
        memory.append(rss_mb(node.pid))
        node.stop()
    return seconds, memory


def cluster(root: Path) -> list[dict[str, Any]]:
    kafka = KafkaCluster(root / "cluster")
    try:
        start = timed(kafka.start)
        time.sleep(IDLE_S)
        memory = [rss_mb(node.pid) for node in kafka.nodes.values()]
        tool = [timed(lambda: kafka.tool("kafka-topics", "--list")) for _ in range(3)]
    finally:
        kafka.stop()
    return [
        row("cluster: 3 nodes formatted and started, all unfenced", start),
        row("cluster: RSS of the 3 JVMs, idle", sum(memory), "MB", " + ".join(f"{m:.0f}" for m in memory)),
        row("cluster: one Kafka tool run (kafka-topics --list)", statistics.median(tool), notes="median of 3"),
    ]


def run(sections: Sequence[str] = ("broker", "variants", "cluster")) -> list[dict[str, Any]]:
    load = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    with scratch() as root:
        steps = {"broker": local_broker, "variants": jvm_variants, "cluster": cluster}
        for name in sections:
            rows += steps[name](root)
    rows.append(row("load average (1 min) at the start / end", f"{load:.1f} / {os.getloadavg()[0]:.1f}", ""))
    return rows


if __name__ == "__main__":
    for result in run():
        print(result)
