"""Kafka's own MetadataImage as the oracle for kraftlake's replay.

`java/oracle/src/KafkaImageOracle.java` reads a `__cluster_metadata-0` directory with Kafka 4.4's classes
(MetadataRecordSerde, RecordsIterator, MetadataBatchLoader, MetadataDelta) and writes every image Kafka's
loader publishes (one commit per Raft batch), once, as a snapshot file with Kafka's snapshot writer, with the
offset from which it is in force. Here each file is loaded with kraftlake's own snapshot loading.

`assert_matches_kafka(log_dir)` is the comparison, for any log (the real samples, our quorum's, a real cluster's),
at EVERY offset of the log (`bootstrap=True`: a log from 0 read after the directory's bootstrap checkpoint, as a
Kafka 4.x node formatted with `--standalone` reads it, and as `kraftlake replay DIR` does): kraftlake's answer there
(`replay.visibility` over one in-process replay: what `kraftlake replay --to-offset N` answers) is the image Kafka
published last at or before it, published at the same offset, or both have none. Images are compared as canonical
JSON (hashed, what `kraftlake replay --json` prints) and as whole images, which also hold what the canonical form
hides (secret config values, SCRAM salts and keys). Where kraftlake differs from Kafka on purpose
(`DELIBERATE_DIFFERENCES`), the comparison checks exactly that difference at exactly the offsets it applies to, and
reports them by name; everything else must be equal.

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
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.lake.errors import TimeTravelError
from kraftlake.lake.reader import WarehouseReader
from kraftlake.records import RecordBatch
from kraftlake.records import metadata_types as mt
from kraftlake.records.config_secrecy import is_secret_config
from kraftlake.records.files import BOOTSTRAP_ID, METADATA_PARTITION_DIR, LogReader, read_snapshot
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import EMPTY_IMAGE, SUB_IMAGES, MetadataImage
from kraftlake.replay.loader import BatchLoader, Manifest
from kraftlake.replay.log_replay import history_sources, replay_paths, replay_sources
from kraftlake.replay.visibility import BatchPublishes, Known, OffsetNotKnown, image_offset
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


@dataclass(frozen=True)
class KafkaPublish:
    """An image Kafka's loader published (or a Raft state change): in force from `offset`, its provenance
    offset `provenance`, its state in `snapshot` (shared with the publishes before it while unchanged)."""

    offset: int
    provenance: int
    snapshot: Path


def kafka_published(log_dir: Path, out_dir: Path, bootstrap: bool = False) -> list[KafkaPublish]:
    """Runs the oracle once: every image Kafka's loader publishes for the log (after its bootstrap
    checkpoint, with `bootstrap`), in log order."""
    command = ["java", *JVM_OPTIONS, "-cp", oracle_classpath(), ORACLE_CLASS, str(metadata_dir(log_dir)),
               str(out_dir), "--published", *(["--bootstrap"] if bootstrap else [])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise OracleError(f"the Kafka oracle failed on {log_dir} (exit {done.returncode}): {last}")
    published: list[KafkaPublish] = []
    for line in done.stdout.splitlines():
        offset, provenance, name = line.split("\t")
        snapshot = published[-1].snapshot if name == "-" else out_dir / name
        published.append(KafkaPublish(int(offset), int(provenance), snapshot))
    return published


def kafka_snapshots(log_dir: Path, out_dir: Path) -> dict[int, Path]:
    """offset → Kafka's image from there on, at each offset where Kafka publishes a new state."""
    changes: dict[int, Path] = {}
    for publish in kafka_published(log_dir, out_dir):
        if not changes or changes[max(changes)] != publish.snapshot:
            changes[publish.offset] = publish.snapshot
    return changes


def kafka_image(snapshot: Path) -> MetadataImage:
    """Kafka's image, read back through kraftlake's own snapshot loading."""
    return replay_paths([snapshot]).image


@dataclass(frozen=True)
class Log:
    """The files the oracle reads, as kraftlake reads them: the image to start from and the batches after
    (or a bootstrap checkpoint loaded before a log from 0)."""

    start: MetadataImage
    batches: tuple[RecordBatch, ...]
    bootstrap: Path | None = None


def read_log(log_dir: Path, bootstrap: bool = False) -> Log:
    """The log from 0, else the earliest snapshot it continues from (the oracle starts at the same place);
    with `bootstrap`, the log from 0 after the directory's bootstrap checkpoint."""
    sources = history_sources(metadata_dir(log_dir))
    if bootstrap:
        assert sources[0].snapshot is None, f"{log_dir}: no log from offset 0 to read after its bootstrap checkpoint"
        reader = LogReader()
        batches = tuple(batch for source in sources for batch in reader.batches(source.path))
        return Log(EMPTY_IMAGE, batches, metadata_dir(log_dir) / BOOTSTRAP_ID.file_name())
    start = EMPTY_IMAGE
    if sources[0].snapshot is not None:
        start = replay_sources(sources[:1]).image
        sources = sources[1:]
    reader = LogReader()
    batches = tuple(batch for source in sources for batch in reader.batches(source.path)
                    if batch.last_offset > start.provenance.offset)
    return Log(start, batches)


@dataclass(frozen=True)
class Answers:
    """kraftlake's answer at every offset of a log, from one in-process replay: `offsets[N]` is the offset
    of the image answering N (None: refused), `images` the images published, by offset."""

    first: int
    offsets: list[int | None]
    images: dict[int, MetadataImage]

    def at(self, offset: int) -> MetadataImage | None:
        answer = self.offsets[offset - self.first]
        return None if answer is None else self.images[answer]


def kraftlake_answers(log: Log) -> Answers:
    """What `kraftlake replay --to-offset N` answers at every N of the log, in one pass: the loader's
    publishes per batch, then `replay.visibility` at each offset (the rule `replay` itself uses)."""
    images: dict[int, MetadataImage] = {}
    start = log.start
    first = start.provenance.offset if start is not EMPTY_IMAGE else (log.batches[0].base_offset if log.batches else 0)
    if start is not EMPTY_IMAGE:
        images[first] = start
    in_batch: list[int] = []

    def published(delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        images[image.provenance.offset] = image
        in_batch.append(image.provenance.offset)

    loader = BatchLoader(published, image=start)
    if log.bootstrap is not None:  # the image the first batch loads on, published with that batch's end
        loader.load_snapshot(read_snapshot(log.bootstrap, BOOTSTRAP_ID), BOOTSTRAP_ID, str(log.bootstrap))
    holding: list[BatchPublishes] = []
    if start is not EMPTY_IMAGE:
        holding.append(BatchPublishes(first, first, (first,), None))
    for batch in log.batches:
        before = loader.published
        in_batch.clear()
        loader.load_commit(batch)
        holding.append(BatchPublishes(batch.base_offset, batch.last_offset, tuple(in_batch),
                                      None if before is None else before.provenance.offset))
    known = Known(min(images, default=None), loader.last_offset, max(images, default=None))
    offsets: list[int | None] = []
    for batch_publishes in holding:
        for offset in range(max(batch_publishes.base_offset, first), batch_publishes.last_offset + 1):
            try:
                offsets.append(image_offset(offset, batch_publishes, known))
            except OffsetNotKnown:
                offsets.append(None)
    return Answers(first, offsets, images)


def same_state(a: MetadataImage, b: MetadataImage) -> bool:
    """Equal but for the provenance (where an image stands in the log is not state)."""
    return all(getattr(a, name) == getattr(b, name) for name in SUB_IMAGES)


def canonical(image: MetadataImage) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(canonical_json(image, provenance=False))
    return document


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

    return replace(log, batches=tuple(map(without_markers, log.batches)))


def expected_answers(log: Log, differences: dict[str, list[int]]) -> Iterator[tuple[int, MetadataImage | None]]:
    """kraftlake's answer at every offset, except after an Abort Kafka's loader keeps: there, kraftlake's
    replay of the log with that transaction kept (its Begin and Abort taken out), noted where it differs."""
    aborts = aborts_kafka_keeps(log.batches)
    kept = [kraftlake_answers(kept_as_kafka(log, aborts[: count + 1])) for count in range(len(aborts))]
    ours = kraftlake_answers(log)
    for index in range(len(ours.offsets)):
        offset = ours.first + index
        image = ours.at(offset)
        applying = [count for count, abort in enumerate(aborts) if abort.visible_from <= offset]
        if applying:
            as_kafka = kept[applying[-1]].at(offset)
            if image is None or as_kafka is None or not same_state(image, as_kafka):
                differences.setdefault(ABORTED_THEN_MORE, []).append(offset)
            image = as_kafka
        yield offset, image


@dataclass(frozen=True)
class Comparison:
    """What `assert_matches_kafka` compared: every offset of the log (`compared`, of which `refused` where
    both have no image), Kafka's distinct published states by the offset they start at (`snapshots`), and
    where each deliberate difference applied (offsets by name)."""

    first: int  # the first offset compared: the log's, or its starting snapshot's
    compared: int
    refused: int
    snapshots: dict[int, Path]
    published: list[KafkaPublish]
    differences: dict[str, list[int]] = field(default_factory=dict)

    @property
    def offsets(self) -> list[int]:
        return sorted(self.snapshots)

    def kafka_at(self, offset: int) -> KafkaPublish | None:
        """Kafka's last publish at or before `offset` (None: none yet)."""
        at = bisect_right([publish.offset for publish in self.published], offset) - 1
        return self.published[at] if at >= 0 else None


def assert_matches_kafka(log_dir: Path, work_dir: Path, bootstrap: bool = False) -> Comparison:
    """At every offset of the log, kraftlake's answer is Kafka's last published image at or before it
    (published at the same offset, equal as canonical JSON and as whole images), or neither has one.
    One JVM run; Kafka's snapshots are left in `work_dir`. `bootstrap`: read after the bootstrap checkpoint."""
    published = kafka_published(log_dir, work_dir, bootstrap)
    starts = [publish.offset for publish in published]
    kafka_images: dict[Path, MetadataImage] = {}
    checked: dict[Path, MetadataImage] = {}  # Kafka's state: the last image of ours found equal to it
    differences: dict[str, list[int]] = {}
    compared = refused = 0
    first: int | None = None
    for offset, ours in expected_answers(read_log(log_dir, bootstrap), differences):
        first = offset if first is None else first
        compared += 1
        at = bisect_right(starts, offset) - 1
        if ours is None:
            if at >= 0:
                raise MismatchError(f"{log_dir} offset {offset}: kraftlake answers none, Kafka published the image "
                                    f"at offset {published[at].offset}")
            refused += 1
            continue
        if at < 0:
            raise MismatchError(f"{log_dir} offset {offset}: Kafka published nothing yet, kraftlake answers the "
                                f"image at {ours.provenance.offset}")
        kafka = published[at]
        if ours.provenance.offset != kafka.offset:
            raise MismatchError(f"{log_dir} offset {offset}: kraftlake answers the image published at offset "
                                f"{ours.provenance.offset}, Kafka's was published at {kafka.offset}")
        verified = checked.get(kafka.snapshot)
        if verified is not None and (verified is ours or same_state(verified, ours)):
            continue  # consecutive images share their sub-images: this is cheap, a canonical form is not
        checked[kafka.snapshot] = ours
        if kafka.snapshot not in kafka_images:
            kafka_images[kafka.snapshot] = kafka_image(kafka.snapshot)
        theirs = kafka_images[kafka.snapshot]
        mine = assert_same_canonical(offset, ours, theirs, differences)
        if not same_state(mine, theirs):
            parts = [name for name in SUB_IMAGES if getattr(mine, name) != getattr(theirs, name)]
            raise MismatchError(f"offset {offset}: same canonical JSON, different state (what it hides) in {parts}")
    snapshots: dict[int, Path] = {}
    for publish in published:
        if not snapshots or snapshots[max(snapshots)] != publish.snapshot:
            snapshots[publish.offset] = publish.snapshot
    return Comparison(-1 if first is None else first, compared, refused, snapshots, published, differences)


def assert_warehouse_matches_kafka(reader: WarehouseReader, comparison: Comparison,
                                   offsets: Iterable[int] | None = None) -> int:
    """At every offset of the warehouse (or each of `offsets`: what a follower saw), `WarehouseReader.answers`
    (one read) names the image Kafka published last at or before it, or refuses where Kafka has none;
    `image_at` equals Kafka's image where each published state starts and at the end. Returns the count of
    offsets compared."""
    first, last = reader.published_range()
    wanted = range(min(first, comparison.first), last + 1)
    chosen = set(wanted if offsets is None else offsets)
    answers = dict(zip(wanted, reader.answers(wanted.start, wanted.stop - 1), strict=True))
    for offset in sorted(chosen):
        kafka, answer = comparison.kafka_at(offset), answers[offset]
        if kafka is None:
            assert isinstance(answer, TimeTravelError), f"offset {offset}: Kafka has no image, the warehouse {answer}"
        else:
            assert answer == kafka.offset, f"offset {offset}: the warehouse answers {answer}, Kafka {kafka.offset}"
    for offset in sorted({*(offset for offset in comparison.snapshots if offset in chosen), last}):
        kafka = comparison.kafka_at(offset)
        assert kafka is not None
        assert_same_canonical(offset, reader.image_at(offset).to_image(), kafka_image(kafka.snapshot), {})
    return len(chosen)


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
    return (record_type == "CONFIG_RECORD" and hidden == {"value"}
            and is_secret_config(data["resourceType"], data["name"]))


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
