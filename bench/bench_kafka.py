"""kraftlake beside Apache Kafka 4.4 doing the same work, in the same run (issue 21, items 1 and 5).

(1) Replay: bench_replay's synthetic log (1M partitions, then 500k ISR/leader changes) and the longest real
sample's segment, loaded by kraftlake's `kraftlake.replay.loader.BatchLoader` and by Kafka's own `MetadataBatchLoader`
(`java/oracle/src/KafkaReplayBench.java`: `MetadataDelta`/`MetadataImage`, one commit at the end), both pinned
to one core, CPU time of the loading thread, median of 5 after warm-up (the JVM: two warm-up runs, C2 on).
Decode excluded (batches decoded once, kept) and included (read from the bytes each run). Goal: kraftlake
within 3x of Kafka's Java, decode excluded.
(5) An operator's questions about the synthetic log, each a new process as a user runs it (wall time,
median of 3, not pinned): "every leader and ISR of partition P, with offsets and times" with `kraftlake
history` on a warehouse built by `kraftlake ingest` with its defaults, against Kafka's `kafka-dump-log
--cluster-metadata-decoder` over the segment, filtered for P's topic id and partition as a script would
(the filter reads the tool's output as it streams); "the whole image at offset N" with `kraftlake image
--json` against Kafka's loader replaying the log to N in a fresh JVM (the harness above with TO_OFFSET).

Wall-clock figures on a shared machine: the load average is noted.
"""

from __future__ import annotations

import gc
import os
import re
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import median_seconds, row
from bench.bench_lake_scale import KRAFTLAKE
from bench.bench_replay import replay, synthetic_batches
from kraftlake.records import RecordBatch, decode_batches, encode_batch
from kraftlake.records import metadata_types as mt
from kraftlake.records.files import decode_file
from kraftlake.settings.jars import classpath

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "kafka-samples" / "rjmfernandes_flink-on-prem" / "data"
SEGMENT_NAME = "00000000000000000000.log"
BENCH_CLASS = "kraftlake.oracle.KafkaReplayBench"
KAFKA_JVM = ("-Xmx6g", "-XX:+UseParallelGC")  # the image of 1M partitions lives in the heap; C2 on
DUMP_CLASS = "org.apache.kafka.tools.DumpLogSegments"
REPEAT = 5
TOPICS = int(os.environ.get("KRAFTLAKE_BENCH_KAFKA_TOPICS", "100000"))  # smaller for a quick check of the bench
CLI_REPEAT = 3
GOAL_RATIO = 3.0
LABEL = f"synthetic {TOPICS * 10 // 1000:,}k partitions"

# Kept under the table when BENCHMARKS.md is regenerated.
NOTES = """\
First run (2026-11-25 09:16 UTC, load 4-6: fuzzers on the other core, other benchmarks before it). Kafka's
loader replays the 1M-partition log 7.65x faster than kraftlake's on one core (decode excluded; 12.4x with
decode), so the 3x goal is not met on the synthetic log, while on the longest real sample (17k records, mostly
small batches) kraftlake is within 2.92x. An operator's questions go the other way: the history of one
partition from the warehouse (0.80 s) against `kafka-dump-log` over the segment filtered by a script (11.4 s),
14x; the whole 1M-partition image at the last offset as canonical JSON (4.72 s) against Kafka's loader
replaying the log from offset 0 in a fresh JVM (7.16 s, no output written), 1.5x.

After the replay work of issue 21 item 1 (2026-11-25 10:59 UTC, load 15-18: other engineers' tests and
benchmarks beside it): 4.01x decode excluded (3.44 s against Kafka's 0.86 s; 6.15x with decode), 2.26x on
the longest real sample. The same load, old and new code back to back in one process each (bench_replay's
`replay()`, median of 3): 6.57 -> 3.07 s CPU. Most of it is the cyclic collector, now paused during every
bulk replay (`replay.gc_pause`); the rest the loader's shorter hot path. The remaining gap is memory latency
on the churn (README, "How fast replay is"). Operators' figures of this run are inflated by the load.

The table above is the run after that on a quiet machine (2026-11-25 11:40 UTC, load 1.3-1.5, nothing else
running): 3.73x decode excluded (2.75 s against 0.74 s), 6.5x with decode, 3.0x on the longest real sample;
the goal (3x on the synthetic log) is not met. The operator's questions: history of one partition 0.53 s
against 6.6 s (12.5x), the whole image as JSON 2.71 s against Kafka's loader in a fresh JVM 4.1 s (1.5x).
"""


@contextmanager
def one_core() -> Iterator[None]:
    """This process and the JVMs it starts on one core, as the replay goal states; restored afterwards."""
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, cores)


def kafka_replay(segment: Path) -> dict[str, float]:
    """Kafka's loader on `segment`: median CPU seconds decode excluded / included, and the record count."""
    done = subprocess.run(["java", *KAFKA_JVM, "-XX:ActiveProcessorCount=1", "-cp", classpath("oracle", "kafka"),
                           BENCH_CLASS, str(segment), str(REPEAT)], capture_output=True, text=True, check=True)
    lines = [line.split() for line in done.stdout.splitlines()]
    values = {key: [float(rest[0]) for name, *rest in lines if name == key] for key in ("replay", "decode+replay")}
    return {"replay": statistics.median(values["replay"]), "decode+replay": statistics.median(values["decode+replay"]),
            "records": float(next(rest[0] for name, *rest in lines if name == "records"))}


def kraftlake_replay(batches: Sequence[RecordBatch], raw: bytes) -> dict[str, float]:
    """kraftlake's loader on the same batches: median CPU seconds decode excluded / included."""
    gc.collect()
    gc.freeze()  # the kept input is the benchmark's (see bench_replay)
    try:
        return {"replay": median_seconds(lambda: replay(batches, None), repeat=REPEAT, warmup=1),
                "decode+replay": median_seconds(lambda: replay(decode_batches(raw), None), repeat=REPEAT, warmup=1)}
    finally:
        gc.unfreeze()


def compare(label: str, segment: Path, batches: Sequence[RecordBatch]) -> list[dict[str, Any]]:
    with one_core():
        kafka = kafka_replay(segment)
        ours = kraftlake_replay(batches, segment.read_bytes())
    records = kafka["records"]
    ours_read = sum(len(batch.records) for batch in batches if not batch.is_control)
    if records != ours_read:
        raise RuntimeError(f"{segment}: Kafka read {records:,.0f} metadata records, kraftlake {ours_read:,}")
    rows = []
    for mode in ("replay", "decode+replay"):
        ratio = ours[mode] / kafka[mode]
        rows += [
            row(f"{label}: kraftlake {mode}", records / ours[mode], "records/s", f"{ours[mode]:.2f} s CPU"),
            row(f"{label}: Kafka {mode}", records / kafka[mode], "records/s", f"{kafka[mode]:.2f} s CPU"),
            row(f"{label}: kraftlake / Kafka time, {mode}", ratio, "x", "one core each, medians of 5"),
        ]
    return rows


def write_segment(batches: Sequence[RecordBatch], root: Path) -> Path:
    directory = root / "log" / "__cluster_metadata-0"
    directory.mkdir(parents=True)
    segment = directory / SEGMENT_NAME
    with segment.open("wb") as out:
        for batch in batches:
            out.write(encode_batch(batch))
    return segment


def busiest_partition(batches: Sequence[RecordBatch]) -> tuple[str, str, int, int]:
    """(topic name, topic id, partition, change count) of the partition the churn changed most."""
    messages = [record.message for batch in batches for record in batch.records]
    changes = Counter((m.topic_id, m.partition_id) for m in messages if isinstance(m, mt.PartitionChangeRecord))
    (topic_id, partition), count = changes.most_common(1)[0]
    name = next(m.name for m in messages if isinstance(m, mt.TopicRecord) and m.topic_id == topic_id)
    return name, topic_id, partition, count


def wall(command: Sequence[str], stdout: Any = subprocess.DEVNULL) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=stdout, check=True)
    return time.perf_counter() - start


def dump_and_filter(segment: Path, topic_id: str, partition: int) -> tuple[float, int]:
    """`kafka-dump-log --cluster-metadata-decoder` piped through a filter on P: wall seconds, lines kept."""
    wanted = re.compile(rf'"partitionId":{partition}\b.*"topicId":"{re.escape(topic_id)}"'
                        rf'|"topicId":"{re.escape(topic_id)}".*"partitionId":{partition}\b')
    command = ["java", "-Xmx512m", "-cp", classpath("kafka"), DUMP_CLASS, "--cluster-metadata-decoder",
               "--files", str(segment)]
    start = time.perf_counter()
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as dump:
        assert dump.stdout is not None
        kept = sum(1 for line in dump.stdout if wanted.search(line))
    if dump.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {dump.returncode}")
    return time.perf_counter() - start, kept


def operator_questions(batches: Sequence[RecordBatch], segment: Path, root: Path) -> list[dict[str, Any]]:
    warehouse = root / "warehouse"
    ingest_s = wall([*KRAFTLAKE, "ingest", str(segment.parent), "--warehouse", str(warehouse)])
    name, topic_id, partition, changes = busiest_partition(batches)
    key = f"{name}-{partition}"
    history = [*KRAFTLAKE, "history", "--warehouse", str(warehouse), "--table", "partitions", "--key", key, "--json"]
    ours = statistics.median(wall(history) for _ in range(CLI_REPEAT))
    versions = len(subprocess.run(history, capture_output=True, text=True, check=True).stdout.splitlines())
    dumps = [dump_and_filter(segment, topic_id, partition) for _ in range(CLI_REPEAT)]
    theirs = statistics.median(seconds for seconds, _ in dumps)
    last = str(batches[-1].base_offset + len(batches[-1].records) - 1)
    image = [*KRAFTLAKE, "image", "--warehouse", str(warehouse), "--at-offset", last, "--json"]
    with (root / "image.json").open("wb") as out:
        image_s = statistics.median(wall(image, out) for _ in range(CLI_REPEAT))
    kafka_image = ["java", *KAFKA_JVM, "-cp", classpath("oracle", "kafka"), BENCH_CLASS, str(segment), "1", last]
    kafka_image_s = statistics.median(wall(kafka_image) for _ in range(CLI_REPEAT))
    return [
        row("(5) warehouse: `kraftlake ingest DIR --warehouse W` (defaults)", ingest_s, notes="built once"),
        row(f"(5) history of {key}: `kraftlake history --json`", ours,
            notes=f"{versions} versions ({changes} PartitionChangeRecords + its PartitionRecord)"),
        row(f"(5) history of {key}: kafka-dump-log + filter", theirs, notes=f"{dumps[0][1]} lines kept"),
        row("(5) history: kafka-dump-log / kraftlake time", theirs / ours, "x", f"medians of {CLI_REPEAT}, wall"),
        row(f"(5) image at offset {last}: `kraftlake image --json`", image_s,
            notes=f"{(root / 'image.json').stat().st_size / 1e6:.0f} MB of JSON written"),
        row(f"(5) image at offset {last}: Kafka's loader from offset 0, fresh JVM", kafka_image_s),
        row("(5) image: Kafka / kraftlake time", kafka_image_s / image_s, "x", f"medians of {CLI_REPEAT}, wall"),
    ]


def run() -> list[dict[str, Any]]:
    rows = [row("load average at start", os.getloadavg()[0], "")]
    batches = list(synthetic_batches(TOPICS, churn=5 * TOPICS))
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as scratch:
        segment = write_segment(batches, Path(scratch))
        rows += compare(LABEL, segment, batches)
        sample = SAMPLE / "__cluster_metadata-0" / SEGMENT_NAME
        rows += compare("longest real sample", sample, list(decode_file(sample)))
        ratio = next(r["value"] for r in rows if r["name"] == f"{LABEL}: kraftlake / Kafka time, replay")
        rows.append(row(f"goal: kraftlake replay within {GOAL_RATIO:g}x of Kafka's (decode excluded)",
                        "met" if ratio <= GOAL_RATIO else "NOT met", "", f"{ratio:.2f}x"))
        rows += operator_questions(batches, segment, Path(scratch))
    rows.append(row("load average at the end", os.getloadavg()[0], ""))
    return rows
