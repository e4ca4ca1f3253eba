"""The fleet's streaming job (`kraftlake materialize --fleet`, `spark-submit jobs/materialize.py --fleet`): one
Spark query over every cluster's metadata topic, each cluster into its own warehouse, ROOT/<cluster>/.

Spark glue, as `jobs/materialize.py` is: Spark's Kafka source subscribes to the topics; each micro-batch is
split by topic in the driver and each cluster's messages go to that cluster's own `MicroBatchWriter` (its own
`TopicReplay`, sink and warehouse), so everything that holds for one cluster holds per cluster: one source per
warehouse (the sink's source check), one writer, exactly once by offset, a restart rebuilt from the topic,
a stale writer fenced. A cluster whose data cannot be replayed (a gap, a corrupt batch, another cluster's log
in its topic, a store that refuses) stops with one line naming it; its messages are skipped for the rest of
the run (a restart tries again from its last good image) and the other clusters go on.

With the fleet file's shared `topic`, the query reads that one topic instead: every cluster's messages, keyed
by its name, each cluster on one partition (`kraftlake.records.topic`); a micro-batch is split by the key's
cluster, so its cost is its messages', whatever the number of clusters (Spark's Kafka source pays offset
lookups per topic-partition with new data: fifty topics were fifty tasks a micro-batch). A cluster's writer
reads its part of the topic back after a restart (`SharedTopicReads`: its partition, its key), and its source
names the topic and the key.

The fleet file is looked at every few seconds: a cluster added whose topic exists joins the query (stopped
and started again on the same checkpoint; Spark's source starts a new topic at its first offset); on the
shared topic it joins without a restart (its messages are in the topic already: its writer reads them back at
once, `FleetWriter.catch_up`, not at its next message, which a log that stopped growing never sends). A cluster
removed is no longer written; its topic stays subscribed, because Spark's checkpoint holds its offsets and a
topic dropped from the subscription would be reported as data loss. Each cluster's tables are registered in
the catalog (`kraftlake.fleet.catalog`) once its warehouse exists (a cluster added while the job runs before
those still waiting since the start), and its persistent views
(`<cluster>_published`, `default.fleet_*`) are brought to its last published image, both by the loop that looks
at the file, beside the query and never inside a micro-batch (`PublishedViews`: at most every
`catalog_refresh_seconds`; each at most `RELOAD_S` a round), and all of them once more when the run ends.

The clusters' writers share one `IdleBudget` (`kraftlake.lake.idle_budget`, the file's
`idle_publishes_per_second`): an idle cluster's offset-only image, each two Delta appends, waits its turn, so
the fleet's idle commits are a fixed number a second (at 200 clusters they were 20 a second, most of the
micro-batch's time), and an idle cluster's last offset is readable at most max(`idle_publish_seconds`,
clusters / `idle_publishes_per_second`) late; a change publishes at once.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kraftlake.fleet.catalog import CatalogError, PublishedViews, catalog_conf, check_catalog, register_cluster
from kraftlake.jobs import kafka_topic
from kraftlake.jobs.kafka_topic import KafkaTopicError
from kraftlake.jobs.materialize import (
    REBUILD_TIMEOUT_S,
    JobLog,
    JobObserver,
    MaterializeError,
    MicroBatchWriter,
    Observers,
    check_topic_identity,
    concise_failure,
    local_spark,
    stop_between_batches,
)
from kraftlake.lake import idle_budget
from kraftlake.lake.idle_budget import IdleBudget
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.source import topic_source
from kraftlake.lake.topic_replay import TopicMessage
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.topic import cluster_key, cluster_partition, split_cluster_key
from kraftlake.settings.errors import SettingsError
from kraftlake.settings.flags import MaterializeConfig
from kraftlake.settings.fleet import Fleet, cluster_location, file_stamp, load_fleet

MESSAGE_COLUMNS = ("topic", "partition", "offset", "key", "value")  # of Spark's Kafka source, as a micro-batch has them
TOPICS_FILE = "kraftlake-fleet-topics"  # in the checkpoint: every topic the query ever subscribed to
RELOAD_S = 5.0


def cluster_config(base: MaterializeConfig, fleet: Fleet, name: str) -> MaterializeConfig:
    """One cluster's job settings: its topic, ROOT/<name>, its cluster id; the checkpoint's `clusters/<name>`
    folder keeps its topic's identity."""
    cluster = fleet.clusters[name]
    return dataclasses.replace(
        base, topic=cluster.topic, warehouse=cluster_location(base.warehouse, name),
        spark_checkpoint=base.spark_checkpoint / "clusters" / name, cluster_id=cluster.settings.cluster_id,
    )


class SharedTopicReads:
    """A cluster's part of the fleet's shared topic read outside the stream (`TopicReads`, after a restart or
    when the cluster joins): its partition, its messages only (filtered by the executors)."""

    def __init__(self, config: MaterializeConfig, spark: Any, partition: int, cluster: str) -> None:
        self.config = config
        self.spark = spark
        self.partition = partition
        self.cluster = cluster

    def messages_before(self, kafka_offset: int) -> Iterator[list[TopicMessage]]:
        config = self.config
        return kafka_topic.read_messages(self.spark, config.bootstrap_servers, config.topic,
                                         dict(config.kafka_options), kafka_offset, self.partition,
                                         cluster_key(self.cluster, b""))

    def end_offset(self) -> int:
        config = self.config
        return kafka_topic.end_offset(self.spark, config.bootstrap_servers, config.topic, dict(config.kafka_options),
                                      REBUILD_TIMEOUT_S, self.partition)


class FleetWriter:
    """The foreachBatch function of the fleet's query: a micro-batch split by topic (or, on the shared topic, by
    the key's cluster), each cluster's part to its own writer; a failing cluster is noted (`failures`) and left
    out, the others go on. `observe` gives each cluster's writer its observer (the CLI's log lines and metrics,
    `cluster` label = the cluster's name), as one cluster's job has one."""

    def __init__(self, spark: Any, base: MaterializeConfig, shared: bool = False,
                 observe: Callable[[str], JobObserver] | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.spark = spark
        self.base = base
        self.shared = shared  # the fleet's shared topic: writers by cluster name, not by topic
        self.observe = observe
        self.say = say  # given: each cluster's start and stop lines (`JobLog`)
        self.logs: dict[str, JobLog] = {}  # cluster -> its lines
        self.writers: dict[str, tuple[str, MicroBatchWriter]] = {}  # topic (shared: cluster) -> (cluster, writer)
        self.partitions: dict[str, int] = {}  # the shared topic: cluster -> its partition
        self.failures: dict[str, str] = {}  # cluster -> the one line that stopped it
        self.registered: set[str] = set()
        self.readers: dict[str, WarehouseReader] = {}  # cluster -> a reader of its warehouse, for the catalog's views
        self.joined: dict[str, int] = {}  # cluster -> the reload it joined at (0: the run's start)
        self.reloads = 0
        self.unread: set[str] = set()  # joined the running shared topic, nothing of theirs read yet (`catch_up`)
        # cluster -> held while its writer writes: a micro-batch's part, or the driver loop's catch-up (not the
        # whole micro-batch: at 200 clusters one lasted minutes, and the loop's reload waited for it)
        self.locks: dict[str, threading.Lock] = {}
        self.unnamed_seen = False  # a shared topic's message whose key names no cluster was reported
        # the clusters' offset-only publishes, the fleet file's `idle_publishes_per_second` in all (set at each add)
        self.idle_budget = IdleBudget(idle_budget.PER_SECOND)

    def add(self, fleet: Fleet, name: str) -> None:
        config = cluster_config(self.base, fleet, name)
        self.idle_budget.rate = fleet.settings.idle_publishes_per_second
        self.joined[name] = self.reloads
        self.locks[name] = threading.Lock()
        partitions = fleet.clusters[name].shared_partitions
        if partitions is None:
            writer = MicroBatchWriter(config, self.spark, idle_budget=self.idle_budget)
            self.writers[config.topic] = (name, writer)
        else:
            partition = self.partitions[name] = cluster_partition(name, partitions)
            writer = MicroBatchWriter(
                config, self.spark, SharedTopicReads(config, self.spark, partition, name),
                topic_source(config.bootstrap_servers, config.topic, config.cluster_id, key=name),
                f"{config.topic} partition {partition} key {name}", self.idle_budget)
            self.writers[name] = (name, writer)
            if self.reloads:  # the stream is past its messages so far
                self.unread.add(name)
        self.readers[name] = WarehouseReader(Warehouse(config.warehouse, dict(config.storage_options)))
        observers = [] if self.observe is None else [self.observe(name)]
        if self.say is not None:
            job_log = self.logs[name] = JobLog(name, self.say)
            job_log.started(f"{writer.replay.topic} on {config.bootstrap_servers}", self.readers[name].warehouse)
            observers.append(job_log)
        if observers:
            writer.watched_by(Observers(*observers))

    def clusters(self) -> set[str]:
        return {name for name, _ in list(self.writers.values())}

    def remove(self, name: str) -> None:
        """The cluster left the fleet file: no longer written; its observers are told (its stop line, its series
        unregistered); its warehouse, and its tables and views in the catalog, stay as they are (its history), and
        it leaves the fleet views."""
        for route in [route for route, (cluster, _) in self.writers.items() if cluster == name]:
            _, writer = self.writers.pop(route)
            self.idle_budget.withdraw(writer.replay.pipeline)
            if writer.observer is not None:
                writer.observer.left()
        self.readers.pop(name, None)
        self.joined.pop(name, None)
        self.unread.discard(name)
        self.partitions.pop(name, None)
        self.logs.pop(name, None)

    def stopped(self) -> None:
        """Each cluster's stop line: the last image it published, else the one it started at."""
        for job_log in self.logs.values():
            job_log.stopped()

    def newest_first(self) -> list[str]:
        """The clusters written, those the latest reload added first, then the earlier ones, each group in the
        file's order: the catalog's work goes to a cluster added to a running fleet in the next round, not behind
        the clusters still waiting since the start (at 200 clusters, one added mid-run waited for the other 116
        registrations, minutes, before it was in `fleet_*`)."""
        return sorted(self.readers, key=lambda name: -self.joined[name])

    def published(self, fleet: Fleet) -> dict[str, tuple[WarehouseReader, dict[str, str]]]:
        """The clusters whose tables are registered, as the catalog's views take them (reader, labels), newest
        first; a cluster that stopped is in, its warehouse keeps its last good image."""
        return {name: (self.readers[name], fleet.clusters[name].labels) for name in self.newest_first()
                if name in self.registered and name in fleet.clusters}

    def __call__(self, frame: Any, batch_id: int) -> None:
        if self.shared:
            self.write_shared(split_by_cluster(frame))
        else:
            for topic, messages in split_by_topic(frame).items():
                if topic in self.writers:
                    self.write(topic, messages)
        if (clusters := self.clusters()) and clusters <= set(self.failures):
            raise MaterializeError("every cluster stopped")

    def write_shared(self, parts: dict[tuple[str, int], list[TopicMessage]]) -> None:
        """Each cluster's messages to its writer; a cluster's messages on another partition than its own stop it
        (its order is only kept within one partition); a key that names no cluster is reported once and skipped."""
        for (name, partition), messages in parts.items():
            if not name:
                if not self.unnamed_seen:
                    self.unnamed_seen = True
                    print(f"materialize: topic {self.base.topic} partition {partition} Kafka offset "
                          f"{messages[0].kafka_offset}: a message whose key names no cluster (skipped, and any "
                          "more like it)", file=sys.stderr, flush=True)
            elif name in self.writers and partition != self.partitions[name]:
                self.refuse(name, f"its messages are on partition {partition} of the shared topic, not on its own "
                                f"partition {self.partitions[name]}: the topic's partition count changed, and a "
                                "cluster's order holds only within one partition")
            elif name in self.writers:
                self.write(name, messages)

    def catch_up(self) -> None:
        """Each cluster that joined the running shared topic reads back its part of it now, unless a micro-batch
        had its messages first (`MicroBatchWriter.catch_up`): from the driver's loop, as the stream may have
        nothing new to hand it; a failure stops that cluster alone. Each waits only for its own part of a
        micro-batch under way (its lock)."""
        for name in sorted(self.unread):
            writer = self.writers[name][1]
            with self.locks[name]:
                try:
                    writer.catch_up()
                except Exception as error:
                    self.fail(name, writer.failure or concise_failure(str(error)))
        self.unread.clear()

    def write(self, route: str, messages: list[TopicMessage]) -> None:
        name, writer = self.writers[route]
        with self.locks[name]:
            if name in self.failures:
                return
            try:
                writer.write(messages)
            except Exception as error:  # this cluster stops; the micro-batch goes on for the others
                self.fail(name, writer.failure or concise_failure(str(error)))

    def refuse(self, name: str, line: str) -> None:
        """Stop a cluster whose part of the micro-batch is refused before its replay sees it: a failed
        micro-batch to its observers (refused at once: 0 s), as a replay that fails is."""
        observer = self.writers[name][1].observer
        if name not in self.failures and observer is not None:
            observer.micro_batch(0.0, failed=True)
        self.fail(name, line)

    def fail(self, name: str, line: str) -> None:
        if name in self.failures:
            return
        self.failures[name] = line
        for cluster, writer in list(self.writers.values()):
            if cluster == name:
                self.idle_budget.withdraw(writer.replay.pipeline)
        print(f"materialize: cluster {name}: {line} (its warehouse keeps the last good image; the other clusters "
              "go on)", file=sys.stderr, flush=True)

    def flush(self, register: bool = True) -> None:
        """Every writer's pending image published; then, unless told not to (a stop, which must be quick: a
        service manager kills a job that outlives its grace period), every cluster not yet in the catalog
        registered, with no time budget (the end of an `--available-now` run)."""
        for name, writer in self.writers.values():
            if name not in self.failures:
                try:
                    writer.flush()
                except Exception as error:
                    self.failures[name] = writer.failure or concise_failure(str(error))
                    print(f"materialize: cluster {name}: {self.failures[name]}", file=sys.stderr, flush=True)
        if register:
            self.register_new()

    def register_new(self, budget_s: float | None = None) -> None:
        """Register in the catalog each cluster whose warehouse now exists, newest first (`newest_first`).
        Called from the driver's loop beside the query, never inside a micro-batch: a registration is 45
        tables' metastore calls (seconds on a busy machine), and in a micro-batch every cluster's writes waited
        for it (minutes at 50 clusters in `make bench fleet`). With `budget_s`, a round stops after that long
        (the rest go next round); a failure is one line and is tried again next round."""
        started = time.monotonic()
        waiting = [name for name in self.newest_first()
                   if name not in self.registered and self.readers[name].warehouse.exists()]
        for name in waiting:
            if budget_s is not None and time.monotonic() - started >= budget_s:
                break
            try:  # after the first, each a copy of a cluster this run registered (metastore calls only)
                register_cluster(self.spark, name, self.readers[name].warehouse, like=next(iter(self.registered), None))
            except CatalogError as error:
                print(f"materialize: {error} (tried again later)", file=sys.stderr, flush=True)
                continue
            self.registered.add(name)
            print(f"materialize: catalog: cluster {name} registered", file=sys.stderr, flush=True)


def split_by_topic(frame: Any) -> dict[str, list[TopicMessage]]:
    """A micro-batch's messages per topic, each in Kafka offset order (a message without a value refused)."""
    table = frame.toArrow().sort_by([("topic", "ascending"), ("offset", "ascending")])
    grouped: dict[str, list[TopicMessage]] = {}
    for topic, offset, key, value in zip(*(table.column(c).to_pylist() for c in ("topic", "offset", "key", "value")),
                                         strict=True):
        if value is None:
            raise KafkaTopicError(f"topic {topic} Kafka offset {offset}: a message without a value")
        grouped.setdefault(topic, []).append(TopicMessage(offset, key, value))
    return grouped


def split_by_cluster(frame: Any) -> dict[tuple[str, int], list[TopicMessage]]:
    """A shared topic's micro-batch per (cluster, partition), each in Kafka offset order, the cluster's name cut
    off the key (a key that names none: cluster ""); a message without a value refused."""
    table = frame.toArrow().sort_by([("partition", "ascending"), ("offset", "ascending")])
    grouped: dict[tuple[str, int], list[TopicMessage]] = {}
    for partition, offset, key, value in zip(
            *(table.column(c).to_pylist() for c in ("partition", "offset", "key", "value")), strict=True):
        if value is None:
            raise KafkaTopicError(f"partition {partition} Kafka offset {offset}: a message without a value")
        name, own_key = split_cluster_key(key) or ("", key)
        grouped.setdefault((name, partition), []).append(TopicMessage(offset, own_key, value))
    return grouped


def ready_clusters(spark: Any, base: MaterializeConfig, fleet: Fleet, known: set[str]) -> Iterator[str]:
    """The clusters not in `known` whose topic exists and is the one the checkpoint read before (the shared
    topic is checked once, at the start: every cluster is ready); one line for each left out (it is looked at
    again at the next reload)."""
    for name in fleet.clusters:
        if name in known:
            continue
        if fleet.settings.topic:
            yield name
            continue
        try:
            check_topic_identity(spark, cluster_config(base, fleet, name))
        except (MaterializeError, KafkaTopicError) as error:
            print(f"materialize: cluster {name}: left out for now: {error}", file=sys.stderr, flush=True)
            continue
        yield name


def subscribed(checkpoint: Path, topics: set[str]) -> set[str]:
    """`topics` with every topic the checkpoint's query subscribed to before, recorded for the next start."""
    path = checkpoint / TOPICS_FILE
    before = set(path.read_text().split()) if path.exists() else set()
    every = before | topics
    if every != before:
        checkpoint.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text("\n".join(sorted(every)) + "\n")
        temporary.replace(path)
    return every


def start(spark: Any, base: MaterializeConfig, topics: set[str], writer: FleetWriter) -> Any:
    options = kafka_topic.client_options(base.bootstrap_servers, dict(base.kafka_options))
    reader = (spark.readStream.format("kafka").options(**options).option("subscribe", ",".join(sorted(topics)))
              .option("startingOffsets", "earliest").option("failOnDataLoss", "true"))
    if base.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(base.max_offsets_per_trigger))
    # the columns the split reads, chosen once in the plan: a DataFrame.select in each micro-batch was a dozen
    # Py4J calls, 8 % of the foreachBatch thread's samples at 20 clusters (py-spy, BENCHMARKS.md fleet)
    frame = reader.load().select(*MESSAGE_COLUMNS)
    stream = frame.writeStream.foreachBatch(writer).option("checkpointLocation", str(base.spark_checkpoint))
    if base.available_now:
        stream = stream.trigger(availableNow=True)
    else:
        stream = stream.trigger(processingTime=f"{base.trigger_seconds} seconds")
    return stream.queryName("kraftlake-materialize-fleet").start()


def run_fleet(base: MaterializeConfig, fleet_path: Path, spark: Any, stop: threading.Event | None = None,
              observe: Callable[[str], JobObserver] | None = None,
              say: Callable[[str], None] | None = None) -> dict[str, str]:
    """Run the fleet's query until `stop` is set (with `available_now`: until every topic is drained); returns the
    clusters that stopped, with their line. `base.warehouse` is ROOT, `base.spark_checkpoint` the query's;
    `observe` and `say` as `FleetWriter`'s."""
    fleet = load_fleet(fleet_path)
    shared = fleet.settings.topic
    if shared:  # one topic, one identity: refused in one line when it was deleted and created again
        base = dataclasses.replace(base, topic=shared)
        check_topic_identity(spark, base)
    writer = FleetWriter(spark, base, shared=bool(shared), observe=observe, say=say)
    try:
        return _run_query(spark, base, fleet_path, fleet, writer, stop)
    finally:
        writer.stopped()


def _run_query(spark: Any, base: MaterializeConfig, fleet_path: Path, fleet: Fleet, writer: FleetWriter,
               stop: threading.Event | None) -> dict[str, str]:
    """The query, restarted when a topic joins, until `stop` or (available-now) the topics are drained."""
    shared = writer.shared
    views = PublishedViews(spark, fleet.settings.catalog_refresh_seconds)
    for name in ready_clusters(spark, base, fleet, set()):
        writer.add(fleet, name)
    if not writer.writers:
        raise MaterializeError(f"{fleet_path}: no cluster's topic can be read yet (see the lines above)")
    stamp = file_stamp(fleet_path)
    shown: set[str] = set()
    while True:
        topics = {base.topic} if shared else set(writer.writers)
        query = start(spark, base, subscribed(base.spark_checkpoint, topics), writer)
        try:
            restart = False
            while not restart and not query.awaitTermination(RELOAD_S):
                if stop is not None and stop.is_set():
                    stop_between_batches(query)
                    writer.flush(register=False)
                    return writer.failures  # the catalog stays as the last round left it: a stop is quick
                waiting = not set(fleet.clusters) <= writer.clusters()  # a topic that was not there yet
                if file_stamp(fleet_path) != stamp or waiting:
                    stamp = file_stamp(fleet_path)
                    fleet, restart = _reload(spark, base, fleet_path, fleet, writer)
                    writer.catch_up()
                writer.register_new(budget_s=RELOAD_S)
                views.keep_current(writer.published(fleet), budget_s=RELOAD_S)
                shown = said_shown(views.unioned, shown)
        except Exception as error:
            stopped = writer.failures and all(name in writer.failures for name, _ in writer.writers.values())
            if stopped or isinstance(error, MaterializeError):
                raise MaterializeError("every cluster stopped: " + "; ".join(
                    f"cluster {name}: {line}" for name, line in sorted(writer.failures.items()))) from None
            raise MaterializeError(concise_failure(str(error))) from None
        if not restart:
            writer.flush()
            views.keep_current(writer.published(fleet))
            return writer.failures
        query.stop()


def said_shown(unioned: Mapping[str, object] | None, said: set[str]) -> set[str]:
    """The clusters the catalog's `default.fleet_*` views show now; one line for each new among them (from then
    a session on the metastore sees it)."""
    shown = set(unioned or ())
    for name in sorted(shown - said):
        print(f"materialize: catalog: cluster {name} in the fleet_* views", file=sys.stderr, flush=True)
    return shown


def _reload(spark: Any, base: MaterializeConfig, path: Path, fleet: Fleet, writer: FleetWriter) -> tuple[Fleet, bool]:
    """The fleet file as it is now (the one before, when it no longer loads, or names another shared topic),
    applied; True when a topic joined (the query must restart to read it; a cluster on the shared topic needs
    none)."""
    try:
        loaded = load_fleet(path)
    except SettingsError as error:
        print(f"materialize: {error}; going on with the clusters as they were", file=sys.stderr, flush=True)
        return fleet, False
    if (loaded.settings.topic, loaded.settings.topic_partitions) != (fleet.settings.topic,
                                                                     fleet.settings.topic_partitions):
        print(f"materialize: {path}: topic / topic_partitions changed: a restart of the job applies that; going on "
              "with the clusters as they were", file=sys.stderr, flush=True)
        return fleet, False
    fleet = loaded
    writer.reloads += 1
    known = writer.clusters()
    for name in known - set(fleet.clusters):
        writer.remove(name)
        print(f"materialize: cluster {name} left the fleet file: no longer written", file=sys.stderr, flush=True)
    added = list(ready_clusters(spark, base, fleet, known))
    for name in added:
        writer.add(fleet, name)
    return fleet, bool(added) and not writer.shared


def run_fleet_job(config: MaterializeConfig, spark: Any | None = None, stop: threading.Event | None = None,
                  observe: Callable[[str], JobObserver] | None = None,
                  say: Callable[[str], None] | None = None) -> None:
    """`materialize --fleet`: the session with the fleet's catalog (the file's `[catalog]`, else embedded Derby
    in the checkpoint's `metastore` folder), then the query; clusters that stopped make it end with one line."""
    assert config.fleet is not None
    fleet = load_fleet(config.fleet)
    try:
        conf = catalog_conf(fleet.settings.catalog, config.spark_checkpoint.absolute() / "metastore")
        spark = spark or local_spark("kraftlake-materialize-fleet", extra=conf)
        check_catalog(spark, fleet.settings.catalog)
    except CatalogError as error:
        raise MaterializeError(str(error)) from None
    failures = run_fleet(config, config.fleet, spark, stop, observe, say)
    if failures:
        raise MaterializeError(f"{len(failures)} of {len(fleet.clusters)} clusters stopped ("
                               f"{', '.join(sorted(failures))}): see their lines above")
