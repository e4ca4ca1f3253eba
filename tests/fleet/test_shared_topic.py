"""The fleet on one shared topic (fleet file `topic = …`), all real: the fleet follower (`kraftlake follow --fleet`)
tails twenty metadata directories (three written by real Kafka, seventeen scenario logs of the fleet benchmark)
into one topic on the real broker, keyed by cluster, and is SIGKILLed half-way (a log still growing) and started
again; then the fleet job over that one topic, SIGKILLed mid-micro-batch while it writes the twenty clusters and
started again, ends with each cluster's warehouse equal to an ingest of its own log. One cluster's key carries
another cluster's log (its warehouse already holds a different one): it stops alone, with one line."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.bench_fleet import ScenarioLog
from bench.bench_jobs import START_MS
from kraftlake.bridge.publisher import PublisherConfig, read_position
from kraftlake.cli.broker import LocalBroker
from kraftlake.lake.ingest import ingest
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.batch import read_header
from kraftlake.records.topic import cluster_partition, decode_key, snapshot_of, split_cluster_key
from kraftlake.settings.fleet import cluster_location
from tests.harness.followers import REPO, log_batches
from tests.jobs.running import into_micro_batches
from tests.lake.warehouse_state import last_published, warehouse_contents

pytestmark = pytest.mark.integration
PARTITIONS = 2
SAMPLES = {  # cluster -> the sample directory its follower tails
    "alpha": "Jeong-Rae_KafkaDemo/kraft-combined-logs",  # a log from offset 0 (half of it at first)
    "beta": "kckoh_xflow/kafka-data",  # a snapshot only: published whole, first
    "imposter": "Niloufar1171_LDI-POC",  # its warehouse already holds alpha's log: another cluster's
}
# the rest of the twenty: small scenario logs (bootstrap, then ISR churn and broker outages), each its own seed
SCENARIOS = {f"scenario{number:02d}": number for number in range(17)}
SCENARIO_PARTITIONS, SCENARIO_EVENTS = 20, 12
CLUSTERS = [*SAMPLES, *SCENARIOS]
WAIT_S = 300.0
KILLED_LIMIT = 40  # offsets per micro-batch before the SIGKILL: many small batches, so it lands mid-stream
# after it: the restart first replays the batch the kill left planned (its offsets are in the checkpoint, whatever
# the limit), then takes the rest of the topic (thousands of messages) in a few batches rather than a hundred
RESTART_LIMIT = 2000


@dataclass
class Shared:
    root: Path
    file: Path
    topic: str
    bootstrap: str
    samples: Path

    def warehouse(self, name: str) -> Warehouse:
        return Warehouse(cluster_location(str(self.root / "lake"), name))

    def directory(self, name: str) -> Path:
        return self.root / "clusters" / name / "__cluster_metadata-0"


def kraftlake_process(*args: str) -> list[str]:
    return [sys.executable, "-m", "kraftlake.cli.main", *args]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def topic_batches(shared: Shared) -> dict[str, list[tuple[int, int, bytes | None]]]:
    """Every message of the shared topic per cluster, in topic order: (partition, base offset or -1 for a
    snapshot's batch, value)."""
    consumer = Consumer({"bootstrap.servers": shared.bootstrap, "group.id": "test-shared-topic",
                         "enable.auto.commit": False})
    found: dict[str, list[tuple[int, int, bytes | None]]] = {}
    try:
        for partition in range(PARTITIONS):
            low, high = consumer.get_watermark_offsets(TopicPartition(shared.topic, partition), timeout=30,
                                                       cached=False)
            consumer.assign([TopicPartition(shared.topic, partition, low)])
            at = low
            while at < high:
                for message in consumer.consume(1000, timeout=0.5):
                    assert message.error() is None, message.error()
                    at = (message.offset() or 0) + 1
                    split = split_cluster_key(message.key())
                    assert split is not None, f"a key without a cluster at {partition}/{message.offset()}"
                    name, key = split
                    offset = -1 if snapshot_of(key) is not None else decode_key(key)
                    found.setdefault(name, []).append((partition, offset, message.value()))
    finally:
        consumer.close()
    return found


def wait_in_topic(shared: Shared, name: str, last_base: int) -> None:
    """Until the topic holds cluster `name`'s batch at `last_base` (-1: a snapshot's); the follower creates the
    topic when it starts."""
    deadline = time.monotonic() + WAIT_S
    admin = AdminClient({"bootstrap.servers": shared.bootstrap})
    while True:  # every topic listed: asking for one by name could have the broker create it, with 1 partition
        with contextlib.suppress(KafkaException):  # created, its partitions' leaders not known yet
            if shared.topic in admin.list_topics(timeout=10).topics and max(
                    (offset for _, offset, _ in topic_batches(shared).get(name, [])), default=-2) >= last_base:
                return
        assert time.monotonic() < deadline, f"cluster {name} never reached offset {last_base} in {shared.topic}"
        time.sleep(0.5)


def follow(shared: Shared, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(kraftlake_process("follow", "--fleet", str(shared.file), "--bootstrap-servers",
                                              shared.bootstrap, "--log-interval", "1"),
                            cwd=REPO, env=env(), stdout=log.open("ab"), stderr=subprocess.STDOUT)


def half(segment: Path) -> tuple[bytes, bytes]:
    """The segment's bytes cut at the batch boundary nearest its middle: (the first part, the rest)."""
    data = segment.read_bytes()
    at = 0
    while at < len(data) // 2:
        at += read_header(data, at, str(segment)).size_in_bytes
    return data[:at], data[at:]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, kafka_broker: LocalBroker, samples_dir: Path) -> Iterator[Shared]:
    """The three clusters followed into one topic, through a follower SIGKILLed while alpha's log grows."""
    root = tmp_path_factory.mktemp("shared")
    shared = Shared(root, root / "fleet.toml", f"kraftlake-fleet-{root.name[-8:].replace('_', '')}",
                    kafka_broker.bootstrap_servers, samples_dir)
    for name, sample in SAMPLES.items():
        source = samples_dir / sample / "__cluster_metadata-0"
        shutil.copytree(source, shared.directory(name), ignore=shutil.ignore_patterns("*.snapshot"))
    segment = next(shared.directory("alpha").glob("*.log"))
    first, rest = half(segment)
    segment.write_bytes(first)
    for name, seed in SCENARIOS.items():
        scenario = ScenarioLog(shared.directory(name).parent, seed, SCENARIO_PARTITIONS, START_MS)
        for event in range(1, SCENARIO_EVENTS + 1):
            scenario.event(START_MS + event * 60_000)
        scenario.flush()
    ingest(samples_dir / SAMPLES["alpha"], shared.warehouse("imposter"))  # imposter's warehouse: another log
    shared.file.write_text(textwrap.dedent(f"""\
        warehouse_root = "{root / 'lake'}"
        checkpoint = "{root / 'checkpoint'}"
        topic = "{shared.topic}"
        topic_partitions = {PARTITIONS}
        """) + "".join(f'\n[clusters.{name}]\nmetadata_dir = "{shared.directory(name)}"\n' for name in CLUSTERS))
    log = root / "follow.log"
    follower = follow(shared, log)
    try:
        wait_in_topic(shared, "alpha", max(log_batches(shared.directory("alpha"))))
        follower.send_signal(signal.SIGKILL)  # its last position may lag the topic: a restart re-sends, never skips
        follower.wait(60)
        with segment.open("ab") as appended:  # the log goes on while no follower runs
            appended.write(rest)
        follower = follow(shared, log)
        for name in ["alpha", "imposter", *SCENARIOS]:
            wait_in_topic(shared, name, max(log_batches(shared.directory(name))))
        wait_in_topic(shared, "beta", -1)  # its snapshot
        config = PublisherConfig(shared.bootstrap, shared.topic, cluster="alpha", partitions=PARTITIONS)
        deadline = time.monotonic() + WAIT_S
        while read_position(config).next_offset <= max(log_batches(shared.directory("alpha"))):
            assert time.monotonic() < deadline, "alpha's position was never recorded past its log"
            time.sleep(0.5)
    finally:
        follower.send_signal(signal.SIGTERM)
        follower.wait(120)
    assert follower.returncode == 0, log.read_text()[-3000:]
    yield shared


def test_every_cluster_in_order_on_its_own_partition_through_a_follower_killed(shared: Shared) -> None:
    """Each cluster's messages are on the one partition its name hashes to; its log batches, first copies in
    topic order, are its whole log byte for byte; a restart only ever repeated whole batches."""
    found = topic_batches(shared)
    assert set(found) == set(CLUSTERS)
    assert len({cluster_partition(name, PARTITIONS) for name in CLUSTERS}) > 1, "the clusters share no partition"
    for name, messages in found.items():
        assert {partition for partition, _, _ in messages} == {cluster_partition(name, PARTITIONS)}, name
        log = log_batches(shared.directory(name))
        firsts: dict[int, bytes | None] = {}
        for _, offset, value in messages:
            if offset >= 0:
                assert firsts.setdefault(offset, value) == value, f"{name}: two batches at offset {offset}"
        assert list(firsts) == sorted(log), f"{name}: the topic's first copies are not the log in order"
        assert all(firsts[offset] == raw for offset, raw in log.items()), name
    alpha = [offset for _, offset, _ in found["alpha"]]
    assert len(alpha) >= len(set(alpha)), alpha  # duplicates allowed after the SIGKILL, never a gap
    assert [offset for _, offset, _ in found["beta"]] == [-1] * len(found["beta"]) and found["beta"]


def job(shared: Shared, max_offsets: int, *extra: str) -> list[str]:
    return kraftlake_process("materialize", "--fleet", str(shared.file), "--bootstrap-servers", shared.bootstrap,
                             "--max-offsets-per-trigger", str(max_offsets), "--no-coalesce-backlog", *extra)


def without_images(contents: dict[str, Any]) -> dict[str, Any]:
    """Image offsets follow micro-batch boundaries, which differ from ingest's: compare everything else."""
    return {name: rows for name, rows in contents.items()
            if name != "image_offsets" and not name.endswith("checkpoints")}


def test_the_job_killed_mid_micro_batch_then_restarted_equals_each_cluster_ingested(
    shared: Shared, tmp_path: Path
) -> None:
    running = subprocess.Popen(job(shared, KILLED_LIMIT, "--trigger-seconds", "0.5"), cwd=REPO, env=env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        into_micro_batches(running, shared.root / "lake" / "alpha", random.Random(36))
    finally:
        running.send_signal(signal.SIGKILL)
        running.wait(60)
    done = subprocess.run(job(shared, RESTART_LIMIT, "--available-now"), cwd=REPO, env=env(), capture_output=True,
                          text=True, timeout=1800)
    lines = [line for line in done.stderr.splitlines() if line.startswith(("materialize", "kraftlake"))]
    assert done.returncode == 2, done.stderr[-3000:]
    imposter = [line for line in lines if line.startswith("materialize: cluster imposter: ")]
    assert len(imposter) == 1 and "another log" in imposter[0] and f"{shared.topic} key imposter" in imposter[0], lines
    assert lines[-1].startswith(f"kraftlake materialize: 1 of {len(CLUSTERS)} clusters stopped (imposter)"), lines
    for name in ["alpha", "beta", *SCENARIOS]:
        reference = Warehouse(tmp_path / name)
        ingest(shared.samples / SAMPLES[name] if name in SAMPLES else shared.directory(name).parent, reference)
        contents = warehouse_contents(shared.warehouse(name))
        assert without_images(contents) == without_images(warehouse_contents(reference)), name
        assert len(contents["image_offsets"]) == len(set(contents["image_offsets"])), name
    # imposter's warehouse kept the log it held: nothing of the other one was written
    alpha_reference = Warehouse(tmp_path / "alpha")
    assert without_images(warehouse_contents(shared.warehouse("imposter"))) == without_images(
        warehouse_contents(alpha_reference))


def test_a_cluster_added_to_a_running_job_is_written_at_once_and_one_removed_keeps_its_history(
    shared: Shared, tmp_path: Path
) -> None:
    """A job over the shared topic with beta only; then the file names alpha instead, while it runs. The topic
    gets nothing new meanwhile (its followers are done): alpha's writer reads back its part of the topic at once,
    not at a next message that never comes (the catalog's part: test_shared_reload, and tests/fleet/test_catalog's
    cluster added); beta is no longer written and keeps its history."""
    base = textwrap.dedent(f"""\
        warehouse_root = "{tmp_path / 'lake'}"
        checkpoint = "{tmp_path / 'checkpoint'}"
        topic = "{shared.topic}"
        topic_partitions = {PARTITIONS}
        """)
    file = tmp_path / "fleet.toml"

    def names(*clusters: str) -> None:
        temporary = file.with_suffix(".tmp")
        temporary.write_text(base + "".join(f'\n[clusters.{name}]\nmetadata_dir = "{shared.directory(name)}"\n'
                                            for name in clusters))
        temporary.replace(file)

    def warehouse(name: str) -> Warehouse:
        return Warehouse(cluster_location(str(tmp_path / "lake"), name))

    names("beta")
    log = tmp_path / "materialize.log"
    command = kraftlake_process("materialize", "--fleet", str(file), "--bootstrap-servers", shared.bootstrap,
                                "--no-coalesce-backlog")
    running = subprocess.Popen(command, cwd=REPO, env=env(), stdout=log.open("wb"), stderr=subprocess.STDOUT)
    try:
        into_micro_batches(running, tmp_path / "lake" / "beta", random.Random(36))
        names("alpha")
        alpha = max(log_batches(shared.directory("alpha")))
        deadline = time.monotonic() + WAIT_S
        while (last_published(tmp_path / "lake" / "alpha") or -1) < alpha:
            assert running.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
    finally:
        running.send_signal(signal.SIGTERM)
        running.wait(180)
    lines = log.read_text().splitlines()
    assert running.returncode == 0, lines[-30:]
    assert "materialize: cluster beta left the fleet file: no longer written" in lines
    for name in ("alpha", "beta"):  # beta's history is its log's still
        reference = Warehouse(tmp_path / "reference" / name)
        ingest(shared.samples / SAMPLES[name], reference)
        assert without_images(warehouse_contents(warehouse(name))) == without_images(
            warehouse_contents(reference)), name
