"""Kafka's own MetadataImage as the oracle for kraftlake's replay.

`java/oracle/src/KafkaImageOracle.java` reads a `__cluster_metadata-0` directory with Kafka 4.4's classes
(MetadataRecordSerde, RecordsIterator, MetadataBatchLoader, MetadataDelta) and writes Kafka's image at each
chosen offset as a snapshot file with Kafka's snapshot writer. Here each file is loaded with kraftlake's own
snapshot loading and compared with kraftlake's reference replay of the same files at the same offset.

`assert_matches_kafka(log_dir)` is the comparison, for any log (the real samples, our quorum's, a real
cluster's): as canonical JSON (what `kraftlake replay --json` prints) and as whole images, which also hold
what the canonical form hides (secret config values, SCRAM salts and keys). Where kraftlake differs from
Kafka on purpose (`DELIBERATE_DIFFERENCES`), the comparison checks exactly that difference at exactly the
offsets it applies to, and reports them by name; everything else must be equal.

One real difference is kept on purpose and not projected (a MismatchError in `configs` right after a
RemoveTopicRecord): Kafka keeps a topic config written in the same commit as the topic's removal (its
ConfigurationsDelta clears only what the commit's starting image held), so its image there depends on how
batches fall into commits; kraftlake removes it (tests/replay/test_kafka_oracle.py pins it).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.records import RecordBatch
from kraftlake.records import metadata_types as mt
from kraftlake.records.files import METADATA_PARTITION_DIR, LogReader
from kraftlake.records.json_form import is_sensitive_config
from kraftlake.replay.image import EMPTY_IMAGE, SUB_IMAGES, MetadataImage
from kraftlake.replay.loader import BatchLoader
from kraftlake.replay.log_replay import cut_batches, history_sources, replay_paths, replay_sources
from kraftlake.replay.voters import VotersImage
from kraftlake.settings.jars import MissingJarsError, classpath, jars_root

ORACLE_CLASS = "kraftlake.oracle.KafkaImageOracle"
ORACLE_SOURCE = "java/oracle/src/KafkaImageOracle.java"
JVM_OPTIONS = ("-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
TRANSACTION_MARKERS = (mt.BeginTransactionRecord, mt.EndTransactionRecord, mt.AbortTransactionRecord)

ABORTED_THEN_MORE = "aborted-then-more"
KRAFT_VERSION_0 = "kraft-version-0"
DELIBERATE_DIFFERENCES = {
    ABORTED_THEN_MORE: "an aborted transaction followed by a record in the same commit: Kafka's loader keeps "
                       "the aborted records, kraftlake always discards them (README, Semantics)",
    KRAFT_VERSION_0: "a KRaftVersion record of level 0: kraftlake shows kraft.version 0, Kafka's snapshot writer "
                     "writes no KRaftVersion record below level 1, so its image reads back with none",
}


class OracleError(RuntimeError):
    """The oracle program is missing or failed: the message names the folder or file and the fix."""


class MismatchError(AssertionError):
    """kraftlake's image differs from Kafka's at an offset, beyond the deliberate differences."""


@dataclass(frozen=True)
class Comparison:
    """What `assert_matches_kafka` compared: Kafka's snapshot at each offset, and where each deliberate
    difference applied (offsets by name)."""

    snapshots: dict[int, Path]
    differences: dict[str, list[int]] = field(default_factory=dict)

    @property
    def offsets(self) -> list[int]:
        return sorted(self.snapshots)


def oracle_classpath() -> str:
    """Kafka's jars and the compiled oracle; one clear error when either is missing."""
    compiled = jars_root() / "oracle" / "classes" / (ORACLE_CLASS.replace(".", "/") + ".class")
    if not compiled.is_file():
        raise OracleError(f"no {compiled}: compile {ORACLE_SOURCE} (`make jars`)")
    try:
        return classpath("oracle", "kafka")
    except MissingJarsError as error:
        raise OracleError(str(error)) from None


def metadata_dir(log_dir: Path) -> Path:
    """A data dir or the `__cluster_metadata-0` folder itself."""
    return log_dir / METADATA_PARTITION_DIR if (log_dir / METADATA_PARTITION_DIR).is_dir() else log_dir


def kafka_snapshots(log_dir: Path, out_dir: Path, offsets: Iterable[int] | None = None) -> dict[int, Path]:
    """Runs the oracle once: offset → the snapshot file of Kafka's image there (`offsets` None: every offset
    whose record changes Kafka's image or its Raft voter state)."""
    args = ["--changes"]
    if offsets is not None:  # in a file: a long log's offsets would not fit on a command line
        out_dir.mkdir(parents=True, exist_ok=True)
        listed = out_dir / "offsets.txt"
        listed.write_text("\n".join(str(offset) for offset in sorted(set(offsets))) + "\n")
        args = ["--offsets", str(listed)]
    command = ["java", *JVM_OPTIONS, "-cp", oracle_classpath(), ORACLE_CLASS, str(metadata_dir(log_dir)),
               str(out_dir), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise OracleError(f"the Kafka oracle failed on {log_dir} (exit {done.returncode}): {last}")
    written = (line.split("\t") for line in done.stdout.splitlines())
    return {int(offset): out_dir / name for offset, name in written}


def kafka_image(snapshot: Path) -> MetadataImage:
    """Kafka's image, read back through kraftlake's own snapshot loading."""
    return replay_paths([snapshot]).image


@dataclass(frozen=True)
class Log:
    """The files the oracle reads, as kraftlake reads them: the image to start from and the batches after."""

    start: MetadataImage
    batches: tuple[RecordBatch, ...]


def read_log(log_dir: Path) -> Log:
    """The log from 0, else the earliest snapshot it continues from (the oracle starts at the same place)."""
    sources = history_sources(metadata_dir(log_dir))
    start = EMPTY_IMAGE
    if sources[0].snapshot is not None:
        start = replay_sources(sources[:1]).image
        sources = sources[1:]
    reader = LogReader()
    batches = tuple(batch for source in sources for batch in reader.batches(source.path)
                    if batch.last_offset > start.provenance.offset)
    return Log(start, batches)


def kraftlake_images(log: Log, offsets: Iterable[int] | None = None) -> Iterator[tuple[int, MetadataImage]]:
    """kraftlake's reference replay at each of `offsets` (None: every offset), in one pass: a loader walks the
    log one commit per batch, and the image at an offset inside a batch is replayed from the last boundary
    outside any transaction, the batch cut after that offset (what `kraftlake replay --to-offset` does)."""
    wanted = None if offsets is None else set(offsets)
    first = log.start.provenance.offset
    if log.start is not EMPTY_IMAGE and (wanted is None or first in wanted):
        yield first, log.start
    walker = BatchLoader(image=log.start)
    boundary_index, boundary = 0, log.start
    for index, batch in enumerate(log.batches):
        for offset in range(max(batch.base_offset, first + 1), batch.last_offset + 1):
            if wanted is None or offset in wanted:
                loader = BatchLoader(image=boundary)
                for cut in cut_batches(log.batches[boundary_index : index + 1], boundary.provenance.offset + 1,
                                       offset):
                    loader.load_batch(cut)
                if loader.in_transaction:
                    yield offset, loader.visible_image()
                else:
                    loader.flush(aligned=offset == batch.last_offset)
                    yield offset, loader.image
        walker.load_batch(batch)
        walker.flush()
        if not walker.in_transaction:
            boundary_index, boundary = index + 1, walker.image


def same_state(a: MetadataImage, b: MetadataImage) -> bool:
    """Equal but for the provenance (where an image stands in the log is not state)."""
    return all(getattr(a, name) == getattr(b, name) for name in SUB_IMAGES)


def canonical(image: MetadataImage) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(canonical_json(image, provenance=False))
    return document


def change_offsets(images: Iterable[tuple[int, MetadataImage]]) -> list[int]:
    """The offsets whose record changes the image (a first image that is not empty counts as a change)."""
    changes, previous = [], EMPTY_IMAGE
    for offset, image in images:
        if not same_state(image, previous):
            changes.append(offset)
        previous = image
    return changes


@dataclass(frozen=True)
class KeptAbort:
    """An Abort followed by a metadata record in its batch: from `visible_from` on, Kafka's image holds the
    records of the transaction `begin`..`abort` (the oracle commits one batch at a time, as a broker
    catching up does; Kafka drops them only when the commit ends while still aborted)."""

    begin: int
    abort: int
    visible_from: int


def aborts_kafka_keeps(batches: Sequence[RecordBatch]) -> list[KeptAbort]:
    found, begin = [], -1
    for batch in batches:
        records = [] if batch.is_control else batch.records
        for index, record in enumerate(records):
            if isinstance(record.message, mt.BeginTransactionRecord):
                begin = record.offset
            if isinstance(record.message, mt.AbortTransactionRecord):
                after = [r.offset for r in records[index + 1 :] if not isinstance(r.message, TRANSACTION_MARKERS)]
                if after:
                    found.append(KeptAbort(begin, record.offset, after[0]))
    return found


def kept_as_kafka(log: Log, aborts: Sequence[KeptAbort]) -> Log:
    """`log` with the Begin and Abort of each of `aborts` taken out: kraftlake's loader then keeps those
    transactions' records as Kafka's does after the Abort (every other offset stays where it was)."""
    markers = {offset for kept in aborts for offset in (kept.begin, kept.abort)}

    def without_markers(batch: RecordBatch) -> RecordBatch:
        kept = tuple(record for record in batch.records if record.offset not in markers)
        return batch if len(kept) == len(batch.records) else replace(batch, records=kept)

    return Log(log.start, tuple(map(without_markers, log.batches)))


def expected_images(log: Log, offsets: Sequence[int] | None,
                    differences: dict[str, list[int]]) -> Iterator[tuple[int, MetadataImage]]:
    """kraftlake's image at each offset, except after an Abort Kafka's loader keeps: there, kraftlake's replay
    of the log with that transaction kept (its Begin and Abort taken out), noted where it differs."""
    aborts = aborts_kafka_keeps(log.batches)
    kept = [dict(kraftlake_images(kept_as_kafka(log, aborts[: count + 1]), offsets)) for count in range(len(aborts))]
    for offset, image in kraftlake_images(log, offsets):
        applying = [count for count, abort in enumerate(aborts) if abort.visible_from <= offset]
        if applying:
            as_kafka = kept[applying[-1]][offset]
            if not same_state(image, as_kafka):
                differences.setdefault(ABORTED_THEN_MORE, []).append(offset)
            image = as_kafka
        yield offset, image


def assert_matches_kafka(log_dir: Path, work_dir: Path, offsets: Iterable[int] | None = None) -> Comparison:
    """Kafka's image equals kraftlake's at each of `offsets` (None: at every offset whose record changes
    either image, and the two change at the same offsets, so they are equal at every offset of the log).
    One JVM run; Kafka's snapshots are left in `work_dir`."""
    snapshots = kafka_snapshots(log_dir, work_dir, offsets)
    log = read_log(log_dir)
    differences: dict[str, list[int]] = {}
    ours = dict(expected_images(log, None if offsets is None else sorted(snapshots), differences))
    if offsets is None:
        changes = change_offsets(sorted(ours.items()))
        if changes != sorted(snapshots):
            only_kafka, only_ours = sorted(set(snapshots) - set(changes)), sorted(set(changes) - set(snapshots))
            raise MismatchError(f"{log_dir}: the images change at different offsets: only Kafka's at "
                                f"{only_kafka[:10]}, only kraftlake's at {only_ours[:10]}")
    for offset, snapshot in sorted(snapshots.items()):
        kafka = kafka_image(snapshot)
        mine = assert_same_canonical(offset, ours[offset], kafka, differences)
        if not same_state(mine, kafka):
            parts = [name for name in SUB_IMAGES if getattr(mine, name) != getattr(kafka, name)]
            raise MismatchError(f"offset {offset}: same canonical JSON, different state (what it hides) in {parts}")
    return Comparison(snapshots, differences)


def assert_same_canonical(offset: int, ours: MetadataImage, kafka: MetadataImage,
                          differences: dict[str, list[int]]) -> MetadataImage:
    """Equal canonical JSON, the kraft.version difference checked exactly: returns `ours` as Kafka shows it."""
    if ours.voters == VotersImage(0) and kafka.voters == VotersImage():
        differences.setdefault(KRAFT_VERSION_0, []).append(offset)
        ours = replace(ours, voters=kafka.voters)
    mine, theirs = canonical(ours), canonical(kafka)
    if mine != theirs:
        parts = [name for name in mine if mine[name] != theirs.get(name)]
        raise MismatchError(f"offset {offset}: kraftlake's image differs from Kafka's in {parts}: "
                            f"{ {name: mine[name] for name in parts} } != { {name: theirs[name] for name in parts} }")
    return ours


# Kafka's own readers of the files: DumpLogSegments (the `kafka` jar set) and the metadata shell 4.3.1 (the
# `kafka-shell` set only: it brings its own Kafka jars).
DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"
METADATA_SHELL = "org.apache.kafka.shell.MetadataShell"
SECRETS_REDACTED = "secrets-redacted"
REDACTED = "[redacted]"
# DumpLogSegments names a control record by its class, `kraftlake dump` by its ControlRecordType.
CONTROL_NAMES = {"LeaderChange": "LEADER_CHANGE", "SnapshotHeader": "SNAPSHOT_HEADER",
                 "SnapshotFooter": "SNAPSHOT_FOOTER", "KRaftVersion": "KRAFT_VERSION", "KRaftVoters": "KRAFT_VOTERS"}
_RECORD_LINE = re.compile(r"^\| offset: (\d+) .*? headerKeys: \[\] (?:payload: (\{.*\})|(\w+):? (\{.*\}))$")


def run_java(jar_set: str, main: str, *args: str, stdin: str | None = None) -> str:
    """stdout of a Kafka tool; a failure raises naming the tool and its last line of output."""
    try:
        path = classpath(jar_set)
    except MissingJarsError as error:
        raise OracleError(str(error)) from None
    done = subprocess.run(["java", *JVM_OPTIONS, "-cp", path, main, *args], input=stdin, capture_output=True,
                          text=True, timeout=300, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1]
        raise OracleError(f"{main} {' '.join(args)} failed (exit {done.returncode}): {last}")
    return done.stdout


def kafka_dump(files: Sequence[Path]) -> dict[Path, list[dict[str, Any]]]:
    """Every record of each file as `kafka-dump-log --cluster-metadata-decoder` decodes it: offset, type,
    version (metadata records) and data."""
    out = run_java("kafka", DUMP_LOG_SEGMENTS, "--cluster-metadata-decoder", "--files", ",".join(map(str, files)))
    dumped: dict[Path, list[dict[str, Any]]] = {}
    records: list[dict[str, Any]] = []
    for line in out.splitlines():
        if line.startswith("Dumping "):
            records = dumped.setdefault(Path(line.removeprefix("Dumping ")), [])
        elif match := _RECORD_LINE.match(line):
            offset, payload, control, data = match.groups()
            if payload is not None:
                records.append({"offset": int(offset), **json.loads(payload)})
            else:
                records.append({"offset": int(offset), "type": CONTROL_NAMES[control], "data": json.loads(data)})
        elif line.startswith("| offset: "):
            raise OracleError(f"a line of DumpLogSegments this harness cannot read: {line[:200]}")
    return dumped


def kraftlake_dump(path: Path) -> list[dict[str, Any]]:
    """`kraftlake dump FILE`: one JSON object per record."""
    done = subprocess.run([sys.executable, "-m", "kraftlake.cli.main", "dump", str(path)], capture_output=True,
                          text=True, check=True, timeout=300)
    return [json.loads(line) for line in done.stdout.splitlines()]


def assert_dump_matches_kafka(files: Sequence[Path], differences: dict[str, list[int]]) -> dict[Path, int]:
    """Per file, `kraftlake dump` and Kafka's DumpLogSegments give the same records: offsets, types, versions,
    data. kraftlake's dump redacts secrets (SCRAM salts and keys, sensitive config values): checked exactly,
    each such field `[redacted]` where Kafka prints a value. Returns the record count per file."""
    counts = {}
    for path, theirs in kafka_dump(files).items():
        ours = kraftlake_dump(path)
        if len(ours) != len(theirs):
            raise MismatchError(f"{path}: kraftlake dumps {len(ours)} records, Kafka's DumpLogSegments {len(theirs)}")
        for mine, kafka in zip(ours, theirs, strict=True):
            data = mine["data"]
            hidden = {key for key, value in data.items() if value == REDACTED and kafka["data"].get(key) != REDACTED}
            if hidden:
                if not redactable(mine["type"], data, hidden):
                    raise MismatchError(f"{path} offset {mine['offset']}: {sorted(hidden)} redacted, not secrets")
                differences.setdefault(SECRETS_REDACTED, []).append(mine["offset"])
                data = {**data, **{key: kafka["data"][key] for key in hidden}}
            fields = ("offset", "type", "version") if "version" in kafka else ("offset", "type")
            if [mine[f] for f in fields] + [data] != [kafka[f] for f in fields] + [kafka["data"]]:
                raise MismatchError(f"{path} offset {mine['offset']}: kraftlake dumps {mine}, Kafka {kafka}")
        counts[path] = len(ours)
    return counts


def redactable(record_type: str, data: dict[str, Any], hidden: set[str]) -> bool:
    """Whether kraftlake's dump may hide exactly `hidden`: SCRAM secrets, or a sensitive config's value."""
    if record_type == "USER_SCRAM_CREDENTIAL_RECORD":
        return hidden <= {"salt", "storedKey", "serverKey"}
    return record_type == "CONFIG_RECORD" and hidden == {"value"} and is_sensitive_config(data["name"])


_SHELL_PARTITION = re.compile(r"PartitionRegistration\(replicas=\[(.*?)\], .*?isr=\[(.*?)\], .*?leader=(-?\d+), "
                              r".*?leaderEpoch=(\d+), partitionEpoch=(\d+)\)")
TOPICS_BY_NAME = "/image/topics/byName"


def shell_topics(snapshot: Path) -> dict[str, dict[int, tuple[Any, ...]]]:
    """Topics and partitions of a snapshot as Kafka's metadata shell shows them: `find` lists them, `cat`
    (every partition, one shell session on stdin) shows each: topic → partition id → (replicas, isr,
    leader, leader epoch, partition epoch)."""
    found = run_java("kafka-shell", METADATA_SHELL, "--snapshot", str(snapshot), "find", TOPICS_BY_NAME)
    paths = [line.removeprefix(TOPICS_BY_NAME + "/").split("/") for line in found.splitlines()
             if line.startswith(TOPICS_BY_NAME + "/")]
    topics: dict[str, dict[int, tuple[Any, ...]]] = {parts[0]: {} for parts in paths if len(parts) == 1}
    partitions = sorted((parts[0], int(parts[1])) for parts in paths if len(parts) == 2 and parts[1].isdigit())
    commands = "".join(f"cat {TOPICS_BY_NAME}/{topic}/{partition}\n" for topic, partition in partitions) + "exit\n"
    shown = _SHELL_PARTITION.findall(run_java("kafka-shell", METADATA_SHELL, "--snapshot", str(snapshot),
                                              stdin=commands))
    if len(shown) != len(partitions):
        raise OracleError(f"the metadata shell showed {len(shown)} of {len(partitions)} partitions of {snapshot}")
    for (topic, partition), (replicas, isr, leader, leader_epoch, partition_epoch) in zip(partitions, shown,
                                                                                        strict=True):
        topics[topic][partition] = (_ints(replicas), _ints(isr), int(leader), int(leader_epoch),
                                    int(partition_epoch))
    return topics


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(item) for item in text.split(", ") if item)


def replay_topics(image: MetadataImage) -> dict[str, dict[int, tuple[Any, ...]]]:
    """kraftlake's image in `shell_topics`' form."""
    return {topic.name: {pid: (p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch)
                         for pid, p in topic.partitions.items()}
            for topic in image.topics.by_id.values()}
