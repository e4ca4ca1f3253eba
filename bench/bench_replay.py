"""Replay throughput of `replay` (records → MetadataImage through BatchLoader), one process pinned to one core,
and the memory an image holds per partition. Input: a synthetic log of 1M partitions (100k topics x 10
partitions, replication factor 3 over 6 brokers) created 20 topics per batch (220 records, as a controller
writes a CreateTopics request), then ISR and leader churn in batches of 250 PartitionChangeRecords (ISR
shrinks and expands, leader moves). Throughput is measured on decoded batches (decode excluded) and from
the encoded bytes (decode included), for one commit over the whole log (`kraftlake replay`) and for a
commit every 10 batches (a loader publishing as it goes). The cyclic collector is paused during a replay, as
`kraftlake replay`, `ingest` and the job pause it (`replay.gc_pause`); the pre-decoded input is moved out of
its reach (`gc.freeze()`) all the same: a real replay drops each batch once loaded.
Goal (issue 3): >= 200k records/s on one core, decode excluded.
"""

from __future__ import annotations

import gc
import os
import random
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

from bench import median_seconds
from kraftlake.records import RecordBatch, decode_batches, encode_batch, make_batch, wire
from kraftlake.records import metadata_types as mt
from kraftlake.replay.gc_pause import paused_collector
from kraftlake.replay.loader import BatchLoader

TOPICS = 100_000
PARTITIONS_PER_TOPIC = 10
BROKERS = 6
REPLICATION = 3
TOPICS_PER_BATCH = 20
CHURN_RECORDS = 500_000
CHURN_BATCH = 250
COMMIT_EVERY = 10
REPEAT = 3
GOAL_RECORDS_PER_SECOND = 200_000


def topic_id(index: int) -> str:
    return wire.uuid_to_text((index + 1).to_bytes(16, "big"))


def assignment(topic: int, partition: int) -> tuple[int, ...]:
    first = (topic + partition) % BROKERS
    return tuple((first + k) % BROKERS for k in range(REPLICATION))


def synthetic_batches(topics: int = TOPICS, churn: int = CHURN_RECORDS, seed: int = 3) -> Iterator[RecordBatch]:
    """The synthetic log, batch by batch (built lazily, so measuring memory never holds the whole log)."""
    rng = random.Random(seed)
    offset = 0
    time_ms = 1_750_000_000_000
    setup: list[Any] = [mt.FeatureLevelRecord(name="metadata.version", feature_level=21)]
    setup += [
        mt.RegisterBrokerRecord(broker_id=b, broker_epoch=100 + b, incarnation_id=topic_id(10**9 + b), fenced=False,
                                end_points=(mt.BrokerEndpoint(name="PLAINTEXT", host=f"b{b}", port=9092,
                                                              security_protocol=0),))
        for b in range(BROKERS)
    ]
    yield make_batch(offset, 1, time_ms, setup)
    offset += len(setup)
    for first in range(0, topics, TOPICS_PER_BATCH):
        messages: list[Any] = []
        for topic in range(first, min(first + TOPICS_PER_BATCH, topics)):
            tid = topic_id(topic)
            messages.append(mt.TopicRecord(name=f"topic-{topic:06d}", topic_id=tid))
            for partition in range(PARTITIONS_PER_TOPIC):
                replicas = assignment(topic, partition)
                messages.append(mt.PartitionRecord(
                    partition_id=partition, topic_id=tid, replicas=replicas, isr=replicas, leader=replicas[0],
                    leader_epoch=0, partition_epoch=0,
                ))
        time_ms += 5
        yield make_batch(offset, 1, time_ms, messages)
        offset += len(messages)
    for first in range(0, churn, CHURN_BATCH):
        messages = []
        for _ in range(min(CHURN_BATCH, churn - first)):
            topic, partition = rng.randrange(topics), rng.randrange(PARTITIONS_PER_TOPIC)
            replicas = assignment(topic, partition)
            kind = rng.random()
            if kind < 0.5:  # ISR shrink or expand
                isr = replicas[: rng.randint(1, REPLICATION)]
                messages.append(mt.PartitionChangeRecord(partition_id=partition, topic_id=topic_id(topic), isr=isr))
            elif kind < 0.75:  # leader move
                messages.append(mt.PartitionChangeRecord(partition_id=partition, topic_id=topic_id(topic),
                                                         leader=rng.choice(replicas)))
            else:  # both, as after a broker failure
                isr = tuple(rng.sample(replicas, 2))
                messages.append(mt.PartitionChangeRecord(partition_id=partition, topic_id=topic_id(topic), isr=isr,
                                                         leader=isr[0]))
        time_ms += 5
        yield make_batch(offset, 1, time_ms, messages)
        offset += len(messages)


def replay(batches: Any, commit_every: int | None) -> BatchLoader:
    """The loader over `batches`, with the collector paused as every bulk replay runs (`replay.gc_pause`)."""
    loader = BatchLoader()
    with paused_collector():
        for index, batch in enumerate(batches):
            loader.load_batch(batch)
            if commit_every is not None and index % commit_every == commit_every - 1:
                loader.flush()
        loader.flush()
    return loader


def image_bytes_per_partition(raw: bytes) -> float:
    """Bytes the final image holds per partition: everything allocated while decoding and replaying `raw`
    that is still alive once the log and the loader are gone (tracemalloc), over the partition count."""
    gc.collect()
    tracemalloc.start()
    image = replay(decode_batches(raw), None).image
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return held / image.topics.partition_count()


def gc_share(work: Callable[[], object]) -> float:
    """The fraction of one run of `work` spent in CPython's cyclic garbage collector."""
    spent = [0.0, 0.0]

    def timer(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            spent[1] = time.perf_counter()
        else:
            spent[0] += time.perf_counter() - spent[1]

    gc.callbacks.append(timer)
    try:
        started = time.perf_counter()
        work()
        return spent[0] / (time.perf_counter() - started)
    finally:
        gc.callbacks.remove(timer)


def run() -> list[dict[str, Any]]:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the goal states
    batches = list(synthetic_batches())
    records = sum(len(batch.records) for batch in batches)
    raw = b"".join(encode_batch(batch) for batch in batches)
    final = replay(batches, None).image
    if final.topics.partition_count() != TOPICS * PARTITIONS_PER_TOPIC:
        raise RuntimeError(f"the synthetic log built {final.topics.partition_count()} partitions")
    del final
    # The decoded input is the benchmark's, not the replay's: a real replay decodes batch by batch and drops
    # them. Frozen, its 1.6M records are not rescanned by every full collection the replay triggers.
    gc.collect()
    gc.freeze()
    one_commit = median_seconds(lambda: replay(batches, None), repeat=REPEAT, warmup=0)
    commits = median_seconds(lambda: replay(batches, COMMIT_EVERY), repeat=REPEAT, warmup=0)
    commits_gc = gc_share(lambda: replay(batches, COMMIT_EVERY))
    both = median_seconds(lambda: replay(decode_batches(raw), None), repeat=REPEAT, warmup=0)
    decode = median_seconds(lambda: sum(1 for _ in decode_batches(raw)), repeat=REPEAT, warmup=0)
    memory = image_bytes_per_partition(raw)
    gc.unfreeze()
    described = (f"{records:,} records in {len(batches):,} batches, {len(raw) / 1e6:.0f} MB ({TOPICS:,} topics x "
                 f"{PARTITIONS_PER_TOPIC}, RF {REPLICATION}, {CHURN_RECORDS:,} changes); CPU time, median of {REPEAT}")
    return [
        {"name": "replay, decode excluded, one commit", "value": records / one_commit, "unit": "records/s",
         "notes": described},
        {"name": f"replay, decode excluded, commit every {COMMIT_EVERY} batches", "value": records / commits,
         "unit": "records/s", "notes": f"{len(batches) // COMMIT_EVERY} images published; {commits_gc:.0%} of the "
                                       "time in the cyclic GC (paused, as in `kraftlake replay`)"},
        {"name": "decode + replay, one commit", "value": records / both, "unit": "records/s",
         "notes": "from the encoded bytes, batch by batch, as `kraftlake replay` reads a log"},
        {"name": "decode alone", "value": records / decode, "unit": "records/s", "notes": "same bytes"},
        {"name": "replay within decode + replay", "value": records / (both - decode), "unit": "records/s",
         "notes": "(decode + replay) time minus decode time"},
        {"name": "image memory per partition", "value": memory, "unit": "bytes",
         "notes": "tracemalloc: what the final image (1M partitions, after churn) holds, decoded from bytes"},
        {"name": "goal: >= 200k records/s on one core (decode excluded)",
         "value": "met" if records / one_commit >= GOAL_RECORDS_PER_SECOND else "NOT met", "unit": "",
         "notes": f"{records / one_commit:,.0f} records/s"},
    ]
