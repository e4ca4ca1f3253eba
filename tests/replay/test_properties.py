"""Properties over random valid record streams (topics, partitions, partition changes, brokers, configs,
quotas, producer ids, ACLs, SCRAM, tokens, removals) with committed and aborted transactions:

- however the stream is cut into batches and commits, the loader ends with the image of one pass;
- the image at any offset N (the loader in memory, `replay_paths` on a file) is the last one published at or
  before N (a reference model of Kafka's publish points) and equals a reference model
  written here: keep the records visible at N (drop aborted transactions and the one still open at N),
  replay them in one delta;
- image -> records -> image is the identity, or the writer names what the chosen version loses.
"""

from __future__ import annotations

import copy
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.records import RecordBatch, encode_batch, make_batch
from kraftlake.records import metadata_types as mt
from kraftlake.records.control_types import LeaderChangeMessage
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.loader import BatchLoader
from kraftlake.replay.log_replay import replay_paths
from kraftlake.replay.topics import MIGRATING_DIRECTORY
from kraftlake.replay.writer import image_records
from tests.replay.builders import apply_records, uuid

SETTINGS = settings(max_examples=60)
BROKER_IDS = st.integers(0, 4)
NAMES = ("orders", "audit", "clicks", "users")
MARKERS = (mt.BeginTransactionRecord, mt.EndTransactionRecord, mt.AbortTransactionRecord)
LEADER_CHANGE = LeaderChangeMessage(version=0, leader_id=1)


@dataclass
class State:
    """What the generator knows exists (as the records written so far leave it), to write valid records."""

    topics: dict[str, str] = field(default_factory=dict)  # name -> id
    replicas: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)  # (topic id, partition)
    brokers: dict[int, int] = field(default_factory=dict)  # id -> epoch
    acls: list[str] = field(default_factory=list)
    scram: list[tuple[str, int]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)


class StreamWriter:
    """Draws one valid operation at a time; an aborted transaction rolls the generator's state back."""

    def __init__(self, draw: Any, metadata_version: int) -> None:
        self.draw = draw
        self.records: list[Any] = [mt.FeatureLevelRecord(name="metadata.version", feature_level=metadata_version)]
        self.state = State()
        self.saved: State | None = None
        self.ids = 0

    def fresh(self) -> str:
        self.ids += 1
        return uuid(10_000 + self.ids)

    def replica_set(self) -> tuple[int, ...]:
        return tuple(self.draw(st.lists(BROKER_IDS, min_size=1, max_size=4, unique=True)))

    def subset(self, of: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(x for x in of if self.draw(st.booleans()))

    def maybe(self, strategy: st.SearchStrategy[Any], absent: Any = None) -> Any:
        return self.draw(st.one_of(st.just(absent), strategy))

    def directories(self, count: int) -> tuple[str, ...]:
        return tuple(self.draw(st.sampled_from([uuid(1), uuid(2), MIGRATING_DIRECTORY])) for _ in range(count))

    def partition(self, topic_id: str, partition_id: int) -> None:
        replicas = self.replica_set()
        isr = self.subset(replicas)
        self.records.append(mt.PartitionRecord(
            partition_id=partition_id, topic_id=topic_id, replicas=replicas, isr=isr,
            leader=isr[0] if isr else -1, leader_epoch=self.draw(st.integers(0, 5)),
            partition_epoch=self.draw(st.integers(0, 5)),
            directories=self.draw(st.just(()) | st.just(self.directories(len(replicas)))),
            eligible_leader_replicas=self.maybe(st.just(self.subset(replicas))),
            last_known_elr=self.maybe(st.just(self.subset(replicas))),
        ))
        self.state.replicas[(topic_id, partition_id)] = replicas

    def op_topic(self) -> None:
        free = [name for name in NAMES if name not in self.state.topics]
        if not free:
            return self.op_remove_topic()
        name, topic_id = self.draw(st.sampled_from(free)), self.fresh()
        self.records.append(mt.TopicRecord(name=name, topic_id=topic_id))
        self.state.topics[name] = topic_id
        for partition_id in range(self.draw(st.integers(0, 3))):
            self.partition(topic_id, partition_id)
        return None

    def op_remove_topic(self) -> None:
        if not self.state.topics:
            return self.op_topic()
        name = self.draw(st.sampled_from(sorted(self.state.topics)))
        topic_id = self.state.topics.pop(name)
        self.state.replicas = {k: v for k, v in self.state.replicas.items() if k[0] != topic_id}
        self.records.append(mt.RemoveTopicRecord(topic_id=topic_id))
        return None

    def op_partition(self) -> None:
        if not self.state.topics:
            return self.op_topic()
        topic_id = self.state.topics[self.draw(st.sampled_from(sorted(self.state.topics)))]
        self.partition(topic_id, self.draw(st.integers(0, 3)))
        return None

    def op_partition_change(self) -> None:
        if not self.state.replicas:
            return self.op_partition()
        key = self.draw(st.sampled_from(sorted(self.state.replicas)))
        replicas = self.maybe(st.builds(self.replica_set))
        current = replicas or self.state.replicas[key]
        # as Kafka's controller writes them: with every replica change (Kafka's merge leaves them as they were)
        placed = self.directories(len(current))
        directories = placed if replicas else self.maybe(st.just(placed))
        self.records.append(mt.PartitionChangeRecord(
            topic_id=key[0], partition_id=key[1], replicas=replicas,
            isr=self.maybe(st.just(self.subset(current))),
            leader=self.draw(st.sampled_from([-2, -1, *current])),
            directories=directories,
            removing_replicas=self.maybe(st.just(self.subset(current))),
            adding_replicas=self.maybe(st.just(self.subset(current))),
            leader_recovery_state=self.draw(st.sampled_from([-1, 0, 1])),
            eligible_leader_replicas=self.maybe(st.just(self.subset(current))),
            last_known_elr=self.maybe(st.just(self.subset(current))),
        ))
        self.state.replicas[key] = current
        return None

    def op_clear_elr(self) -> None:
        self.records.append(mt.ClearElrRecord(topic_name=self.draw(st.sampled_from(["", *sorted(self.state.topics)]))))

    def op_broker(self) -> None:
        registered = sorted(self.state.brokers)
        broker_id = self.draw(st.sampled_from(registered) if registered else BROKER_IDS)
        epoch = self.state.brokers.get(broker_id)
        kinds = ["fence", "unfence", "change", "unregister", "register"] if epoch is not None else ["register"]
        kind = self.draw(st.sampled_from(kinds))
        if kind == "register":
            epoch = (epoch or 0) + self.draw(st.integers(1, 3))
            self.records.append(mt.RegisterBrokerRecord(
                broker_id=broker_id, broker_epoch=epoch, incarnation_id=self.fresh(), fenced=self.draw(st.booleans()),
                rack=self.draw(st.sampled_from([None, "a", "b"])), in_controlled_shutdown=self.draw(st.booleans()),
                log_dirs=tuple(self.fresh() for _ in range(self.draw(st.integers(0, 2)))),
                end_points=(mt.BrokerEndpoint(name="PLAINTEXT", host=f"b{broker_id}", port=9092, security_protocol=0),),
            ))
            self.state.brokers[broker_id] = epoch
            return
        assert epoch is not None  # the other kinds are drawn for a registered broker only
        if kind == "fence":
            self.records.append(mt.FenceBrokerRecord(id=broker_id, epoch=epoch))
        elif kind == "unfence":
            self.records.append(mt.UnfenceBrokerRecord(id=broker_id, epoch=epoch))
        elif kind == "change":
            self.records.append(mt.BrokerRegistrationChangeRecord(
                broker_id=broker_id, broker_epoch=epoch, fenced=self.draw(st.sampled_from([-1, 0, 1])),
                in_controlled_shutdown=self.draw(st.sampled_from([0, 1])),
                log_dirs=tuple(self.fresh() for _ in range(self.draw(st.integers(0, 1)))),
            ))
        else:
            self.records.append(mt.UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=epoch))
            del self.state.brokers[broker_id]

    def op_controller(self) -> None:
        self.records.append(mt.RegisterControllerRecord(controller_id=self.draw(st.integers(3000, 3001)),
                                                        incarnation_id=self.fresh()))

    def op_config(self) -> None:
        resource_type, resource_name = self.draw(st.sampled_from([(2, n) for n in NAMES] + [(4, ""), (4, "1")]))
        self.records.append(mt.ConfigRecord(
            resource_type=resource_type, resource_name=resource_name,
            name=self.draw(st.sampled_from(["retention.ms", "cleanup.policy", "ssl.key.password"])),
            value=self.draw(st.sampled_from([None, "1", "compact"])),
        ))

    def op_quota(self) -> None:
        entity = self.draw(st.sampled_from([(("user", "alice"),), (("user", None),),
                                            (("user", "bob"), ("client-id", "app"))]))
        self.records.append(mt.ClientQuotaRecord(
            entity=tuple(mt.EntityData(entity_type=k, entity_name=v) for k, v in entity),
            key=self.draw(st.sampled_from(["producer_byte_rate", "request_percentage"])),
            value=self.draw(st.floats(0, 1e6)), remove=self.draw(st.booleans()),
        ))

    def op_producer_ids(self) -> None:
        self.records.append(mt.ProducerIdsRecord(broker_id=1, broker_epoch=1,
                                                 next_producer_id=self.draw(st.integers(0, 10**6))))

    def op_acl(self) -> None:
        if self.state.acls and self.draw(st.booleans()):
            acl_id = self.draw(st.sampled_from(self.state.acls))
            self.state.acls.remove(acl_id)
            self.records.append(mt.RemoveAccessControlEntryRecord(id=acl_id))
            return
        acl_id = self.fresh()
        self.state.acls.append(acl_id)
        self.records.append(mt.AccessControlEntryRecord(
            id=acl_id, resource_type=2, resource_name=self.draw(st.sampled_from(NAMES)), pattern_type=3,
            principal="User:alice", host="*", operation=self.draw(st.integers(2, 4)), permission_type=3,
        ))

    def op_scram(self) -> None:
        if self.state.scram and self.draw(st.booleans()):
            user, mechanism = self.draw(st.sampled_from(self.state.scram))
            self.state.scram.remove((user, mechanism))
            self.records.append(mt.RemoveUserScramCredentialRecord(name=user, mechanism=mechanism))
            return
        key = (self.draw(st.sampled_from(["alice", "bob"])), self.draw(st.sampled_from([1, 2])))
        if key not in self.state.scram:
            self.state.scram.append(key)
        self.records.append(mt.UserScramCredentialRecord(
            name=key[0], mechanism=key[1], salt=self.draw(st.binary(min_size=1, max_size=4)), stored_key=b"k",
            server_key=b"s", iterations=self.draw(st.integers(4096, 8192)),
        ))

    def op_token(self) -> None:
        if self.state.tokens and self.draw(st.booleans()):
            token_id = self.draw(st.sampled_from(self.state.tokens))
            self.state.tokens.remove(token_id)
            self.records.append(mt.RemoveDelegationTokenRecord(token_id=token_id))
            return
        token_id = f"token-{self.fresh()}"
        self.state.tokens.append(token_id)
        self.records.append(mt.DelegationTokenRecord(
            owner="User:alice", requester="User:alice", renewers=("User:bob",), issue_timestamp=1,
            max_timestamp=10, expiration_timestamp=self.draw(st.integers(1, 10)), token_id=token_id,
        ))

    def op_feature(self) -> None:
        self.records.append(mt.FeatureLevelRecord(
            name=self.draw(st.sampled_from(["group.version", "transaction.version", "kraft.version"])),
            feature_level=self.draw(st.integers(0, 2)),
        ))

    def op_noop(self) -> None:
        self.records.append(mt.NoOpRecord())

    def op_transaction(self) -> None:
        if self.saved is None:
            self.records.append(mt.BeginTransactionRecord(name="txn"))
            self.saved = copy.deepcopy(self.state)
        elif self.draw(st.sampled_from(("end", "abort"))) == "end":
            self.records.append(mt.EndTransactionRecord())
            self.saved = None
        else:
            self.records.append(mt.AbortTransactionRecord(reason="test"))
            self.state, self.saved = self.saved, None


# Every operation, the ones that need earlier state weighted up so that they get to run.
OPERATIONS = [name for name in dir(StreamWriter) if name.startswith("op_")] + [
    "op_partition_change", "op_partition_change", "op_partition_change", "op_broker", "op_broker", "op_topic",
    "op_transaction", "op_transaction",
]


@st.composite
def record_streams(draw: Any, min_metadata_version: int = 7) -> list[Any]:
    writer = StreamWriter(draw, draw(st.integers(min_metadata_version, 29)))
    for _ in range(draw(st.integers(5, 60))):
        getattr(writer, draw(st.sampled_from(OPERATIONS)))()
    return writer.records


@st.composite
def deliveries(draw: Any, records: list[Any]) -> tuple[list[RecordBatch], set[int]]:
    """`records` cut into batches (some control batches between them) and the batch indexes ending a commit."""
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(records) - 1)), max_size=len(records))) - {len(records)})
    chunks = [records[a:b] for a, b in zip([0, *cuts], [*cuts, len(records)], strict=True)]
    batches: list[RecordBatch] = []
    offset = 0
    for chunk in chunks:
        if draw(st.integers(0, 5)) == 0:
            batches.append(make_batch(offset, 1, 0, [LEADER_CHANGE], control=True))
            offset += 1
        batches.append(make_batch(offset, 1, 0, chunk))
        offset += len(chunk)
    commits = draw(st.sets(st.integers(0, len(batches) - 1)))
    return batches, commits


def reference_image(batches: list[RecordBatch], to_offset: int) -> MetadataImage:
    """The records visible at `to_offset`, replayed into one delta: written without the loader."""
    visible: list[Any] = []
    pending: list[Any] | None = None
    for batch in batches:
        for record in batch.records:
            if batch.is_control or record.offset > to_offset:
                continue
            kind = type(record.message)
            if kind is mt.BeginTransactionRecord:
                pending = []
            elif kind is mt.EndTransactionRecord:
                visible.extend(pending or ())
                pending = None
            elif kind is mt.AbortTransactionRecord:
                pending = None
            elif pending is not None:
                pending.append(record.message)
            else:
                visible.append(record.message)
    return apply_records(visible)


def loaded(batches: list[RecordBatch], commits: set[int]) -> BatchLoader:
    loader = BatchLoader()
    for index, batch in enumerate(batches):
        loader.load_batch(batch)
        if index in commits:
            loader.flush()
    loader.flush()
    return loader


def content(image: MetadataImage) -> str:
    return canonical_json(image, provenance=False)


def publish_points(batches: list[RecordBatch]) -> list[int]:
    """Where Kafka's loader publishes when each batch is a commit, written without the loader: the end of a
    batch outside a transaction, the offset before a Begin that is not its batch's first record; only once a
    metadata record was seen (again after an image that holds none)."""
    points: list[int] = []
    in_transaction = seen = False

    def publish(offset: int) -> None:
        nonlocal seen
        if seen:
            points.append(offset)
            seen = not reference_image(batches, offset).metadata_is_empty()

    for batch in batches:
        for index, record in enumerate([] if batch.is_control else batch.records):
            kind = type(record.message)
            if kind is mt.BeginTransactionRecord:
                if index > 0:
                    publish(record.offset - 1)
                in_transaction = True
            elif kind in (mt.EndTransactionRecord, mt.AbortTransactionRecord):
                in_transaction = False
            else:
                seen = True
        if not in_transaction:
            publish(batch.last_offset)
    return points


def published_images(batches: list[RecordBatch]) -> list[MetadataImage]:
    """Every image the loader publishes with one commit per batch, in order."""
    published: list[MetadataImage] = []
    loader = BatchLoader(lambda delta, image, manifest: published.append(image))
    for batch in batches:
        loader.load_commit(batch)
    return published


@pytest.mark.slow  # make check leaves it to make test
@SETTINGS
@given(st.data())
def test_any_batching_and_commits_give_the_image_of_one_pass(data: st.DataObject) -> None:
    records = data.draw(record_streams())
    batches, commits = data.draw(deliveries(records))
    one_pass = loaded([make_batch(0, 1, 0, records)], set())
    cut = loaded(batches, commits)
    assert content(cut.image) == content(one_pass.image)
    assert cut.last_offset == batches[-1].last_offset
    assert cut.transaction is one_pass.transaction


@pytest.mark.slow  # make check leaves it to make test
@SETTINGS
@given(st.data())
def test_the_image_at_every_offset_is_the_last_published_at_or_before_it(data: st.DataObject) -> None:
    """Kafka's rule at every offset: the last publish point at or before it, holding exactly the records
    visible there (aborted transactions discarded); none before the first."""
    records = data.draw(record_streams())
    batches, _ = data.draw(deliveries(records))
    points = publish_points(batches)
    published = published_images(batches)
    checked: set[int] = set()
    for to_offset in range(batches[-1].last_offset + 1):
        image = next((image for image in reversed(published) if image.provenance.offset <= to_offset), None)
        expected = max((point for point in points if point <= to_offset), default=None)
        if expected is None:
            assert image is None, to_offset
            continue
        assert image is not None and image.provenance.offset == expected, to_offset
        if expected not in checked:  # the same image answers every offset up to the next point
            checked.add(expected)
            assert content(image) == content(reference_image(batches, expected)), to_offset


@settings(max_examples=25)
@given(st.data())
def test_replaying_a_file_to_any_offset_matches_the_reference(data: st.DataObject) -> None:
    records = data.draw(record_streams())
    batches, _ = data.draw(deliveries(records))
    last = batches[-1].last_offset
    points = publish_points(batches)
    offsets = data.draw(st.lists(st.integers(0, last), min_size=1, max_size=4))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "00000000000000000000.log"
        path.write_bytes(b"".join(encode_batch(batch) for batch in batches))
        for to_offset in offsets:
            expected = max((point for point in points if point <= to_offset), default=None)
            if expected is None:
                with pytest.raises(ReplayError, match=r"before the first published image|no image is published"):
                    replay_paths([path], to_offset)
                continue
            result = replay_paths([path], to_offset)
            assert content(result.image) == content(reference_image(batches, expected))
            assert (result.asked, result.image.provenance.offset) == (to_offset, expected)


@SETTINGS
@given(record_streams(min_metadata_version=23))
def test_image_to_records_to_image_is_the_identity(records: list[Any]) -> None:
    image = reference_image([make_batch(0, 1, 0, records)], len(records))
    writer = image_records(image)
    assert writer.losses == []
    back = apply_records([message for message, _ in writer.records])
    assert back == image
    assert canonical_json(back) == canonical_json(image)


@SETTINGS
@given(record_streams(), st.integers(7, 29))
def test_an_older_metadata_version_loses_nothing_silently(records: list[Any], level: int) -> None:
    image = reference_image([make_batch(0, 1, 0, records)], len(records))
    writer = image_records(image, level)
    back = apply_records([message for message, _ in writer.records])
    same = [getattr(back, name) == getattr(image, name) for name in
            ("cluster", "topics", "configs", "client_quotas", "producer_ids", "acls", "scram", "delegation_tokens")]
    assert all(same) or writer.losses, "the writer dropped state without naming it"
    assert back.features.finalized == image.features.finalized
