"""Topics, partitions, ISRs and leaders (Kafka's ReplicationControlManager): each function validates a
request against the working state and returns the records that carry it out."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kraftlake.controller.config_defs import validate_configs
from kraftlake.controller.context import ControllerResult, WriteContext
from kraftlake.controller.errors import (
    BrokerNotRegisteredError,
    ControllerError,
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    FencedLeaderEpochError,
    IneligibleReplicaError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    InvalidUpdateVersionError,
    NewLeaderElectedError,
    NotLeaderOrFollowerError,
    PolicyViolationError,
    PreferredLeaderNotAvailableError,
    StaleBrokerEpochError,
    TopicExistsError,
    UnknownTopicError,
)
from kraftlake.controller.partition_change import (
    RECOVERED,
    RECOVERING,
    Election,
    ElrPolicy,
    build_partition_change,
)
from kraftlake.controller.placement import UsableBroker, place_replicas
from kraftlake.controller.versions import ELIGIBLE_LEADER_REPLICAS_VERSION, MV_3_7_IV2
from kraftlake.controller.working_state import ControllerState, TopicPartition
from kraftlake.records import metadata_types as mt
from kraftlake.records.kafka_names import MIGRATING_DIRECTORY, UNASSIGNED_DIRECTORY
from kraftlake.replay.cluster import BrokerRegistration
from kraftlake.replay.configs import BROKER, TOPIC
from kraftlake.replay.topics import NO_LEADER_CHANGE, PartitionRegistration

MIN_INSYNC_REPLICAS = "min.insync.replicas"
DEFAULT_MIN_INSYNC_REPLICAS = 1
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


@dataclass(frozen=True)
class NewTopic:
    name: str
    partitions: int = -1  # -1: the controller's default
    replication_factor: int = -1  # -1: the controller's default
    assignments: Mapping[int, Sequence[int]] | None = None  # partition -> replicas, instead of placement
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicOutcome:
    """Per-topic result of a multi-topic request: the topic id on success, else the error."""

    topic_id: str | None = None
    partitions: int = 0
    error: ControllerError | None = None

    def to_json(self) -> dict[str, Any]:
        if self.error is not None:
            return {"error": self.error.to_json()}
        return {"topic_id": self.topic_id, "partitions": self.partitions}


@dataclass(frozen=True)
class IsrChange:
    """One partition of an AlterPartition request, as the partition leader sends it."""

    topic: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    leader_recovery_state: int = RECOVERED


@dataclass(frozen=True)
class IsrChangeOutcome:
    topic: str
    partition: int
    leader: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    isr: tuple[int, ...] = ()
    error: ControllerError | None = None

    def to_json(self) -> dict[str, Any]:
        if self.error is not None:
            return {"topic": self.topic, "partition": self.partition, "error": self.error.to_json()}
        return {
            "topic": self.topic, "partition": self.partition, "leader": self.leader,
            "leader_epoch": self.leader_epoch, "partition_epoch": self.partition_epoch, "isr": list(self.isr),
        }


# -- helpers shared with cluster operations -------------------------------------------------------------------


def is_acceptable_leader(state: ControllerState, broker_id: int, excluded: int | None = None) -> bool:
    """Registered, unfenced, not shutting down, and not the broker whose removal is being computed."""
    if broker_id == excluded:
        return False
    broker = state.broker(broker_id)
    return broker is not None and not broker.fenced and not broker.in_controlled_shutdown


def unclean_election_enabled(state: ControllerState, topic_name: str) -> bool:
    """The topic's unclean.leader.election.enable, else the cluster-wide broker default, else false."""
    value = state.configs(TOPIC, topic_name).get("unclean.leader.election.enable")
    if value is None:
        value = state.configs(BROKER, "").get("unclean.leader.election.enable", "false")
    return value.lower() == "true"


def registered_broker(state: ControllerState, broker_id: int, broker_epoch: int) -> BrokerRegistration:
    """The broker's registration, if `broker_epoch` is its current epoch."""
    broker = state.broker(broker_id)
    if broker is None:
        raise BrokerNotRegisteredError(f"broker {broker_id} is not registered")
    if broker.epoch != broker_epoch:
        raise StaleBrokerEpochError(
            f"broker {broker_id} sent epoch {broker_epoch}, but its current epoch is {broker.epoch}"
        )
    return broker


def elr_enabled(state: ControllerState) -> bool:
    return state.feature_level(ELIGIBLE_LEADER_REPLICAS_VERSION) >= 1


def effective_min_isr(state: ControllerState, topic_id: str) -> int:
    """The topic's min.insync.replicas, else the cluster-wide default, else 1; never above the topic's
    replication factor (Kafka's getTopicEffectiveMinIsr)."""
    topic_name = state.topic_name(topic_id) or ""
    value = state.configs(TOPIC, topic_name).get(MIN_INSYNC_REPLICAS)
    if value is None:
        value = state.configs(BROKER, "").get(MIN_INSYNC_REPLICAS, str(DEFAULT_MIN_INSYNC_REPLICAS))
    first = state.partition(topic_id, 0)
    replication_factor = len(first.replicas) - len(first.removing_replicas) if first is not None else 1
    return min(int(value), max(replication_factor, 1))


def elr_policy(state: ControllerState, topic_id: str, unclean_shutdown: frozenset[int] = frozenset()) -> ElrPolicy:
    if not elr_enabled(state):
        return ElrPolicy()
    return ElrPolicy(True, effective_min_isr(state, topic_id), unclean_shutdown)


def default_directory(state: ControllerState, broker_id: int) -> str:
    """Kafka's defaultDir: the broker's only log directory, else UNASSIGNED (MIGRATING if it has none)."""
    broker = state.broker(broker_id)
    if broker is None or not broker.directories:
        return MIGRATING_DIRECTORY
    return broker.directories[0] if len(broker.directories) == 1 else UNASSIGNED_DIRECTORY


def usable_brokers(state: ControllerState) -> list[UsableBroker]:
    """Brokers that may receive new replicas: every registered broker not in controlled shutdown."""
    return [
        UsableBroker(b.broker_id, b.rack, b.fenced) for b in state.brokers() if not b.in_controlled_shutdown
    ]


def removing_broker_change(
    ctx: WriteContext, topic_id: str, partition_id: int, partition: PartitionRegistration, broker_id: int,
    elr: ElrPolicy,
) -> Any | None:
    """The PartitionChangeRecord that takes `broker_id` out of the partition's ISR and leadership (None: no
    change), electing uncleanly where the topic allows it."""
    state = ctx.state
    topic_name = state.topic_name(topic_id) or ""
    return build_partition_change(
        topic_id, partition_id, partition,
        target_isr=tuple(b for b in partition.isr if b != broker_id),
        election=Election.UNCLEAN if unclean_election_enabled(state, topic_name) else Election.ONLINE,
        is_acceptable_leader=lambda b: is_acceptable_leader(state, b, excluded=broker_id),
        metadata_version=ctx.metadata_version,
        elr=elr,
    )


def partition_updates_removing(ctx: WriteContext, broker_id: int, *, unclean_shutdown: bool = False) -> list[Any]:
    """PartitionChangeRecords taking `broker_id` out of the ISR and leadership of every partition it is in;
    after an unclean shutdown out of the ELRs too (its log may have lost acknowledged writes)."""
    state = ctx.state
    records = []
    keys = set(state.partitions_of_broker.get(broker_id, ()))
    if unclean_shutdown:
        keys |= state.elr_partitions_of_broker.get(broker_id, set())
    shutdown = frozenset((broker_id,)) if unclean_shutdown else frozenset()
    policies: dict[str, ElrPolicy] = {}  # per topic: fencing a big broker touches many partitions of each
    for topic_id, partition_id in sorted(keys):
        partition = state.partition(topic_id, partition_id)
        assert partition is not None
        elr = policies.get(topic_id) or policies.setdefault(topic_id, elr_policy(state, topic_id, shutdown))
        record = removing_broker_change(ctx, topic_id, partition_id, partition, broker_id, elr)
        if record is not None:
            records.append(record)
    return records


def partition_updates_adding(ctx: WriteContext, broker_id: int) -> list[Any]:
    """Leaders for leaderless partitions that `broker_id`, about to be unfenced, can now lead."""
    state = ctx.state
    records = []
    policies: dict[str, ElrPolicy] = {}
    for topic_id, partition_id in sorted(state.leaderless):
        partition = state.partition(topic_id, partition_id)
        if partition is None or broker_id not in partition.replicas:
            continue
        topic_name = state.topic_name(topic_id) or ""
        unclean = unclean_election_enabled(state, topic_name)
        last_known_leader = partition.last_known_elr == (broker_id,)  # a balanced recovery may elect it
        if broker_id not in partition.isr and broker_id not in partition.elr and not unclean and not last_known_leader:
            continue
        record = build_partition_change(
            topic_id, partition_id, partition,
            election=Election.UNCLEAN if unclean else Election.ONLINE,
            is_acceptable_leader=lambda b: b == broker_id or is_acceptable_leader(state, b),
            metadata_version=ctx.metadata_version,
            elr=policies.get(topic_id) or policies.setdefault(topic_id, elr_policy(state, topic_id)),
        )
        if record is not None:
            records.append(record)
    return records


def _partition_record(ctx: WriteContext, topic_id: str, partition_id: int, replicas: Sequence[int]) -> Any:
    state = ctx.state
    isr = tuple(r for r in replicas if is_acceptable_leader(state, r))
    if not isr:
        raise InvalidReplicaAssignmentError(
            f"all brokers specified in the assignment of partition {partition_id} are fenced or shutting down"
        )
    directories = (
        tuple(default_directory(state, r) for r in replicas) if ctx.metadata_version >= MV_3_7_IV2 else ()
    )
    return mt.PartitionRecord(
        partition_id=partition_id, topic_id=topic_id, replicas=tuple(replicas), isr=isr,
        removing_replicas=(), adding_replicas=(), leader=isr[0], leader_recovery_state=RECOVERED,
        leader_epoch=0, partition_epoch=0, directories=directories,
    )


def validate_topic_name(name: str) -> None:
    if not name:
        raise InvalidTopicError("the topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(f"topic name {name[:40]!r}… is longer than {MAX_TOPIC_NAME_LENGTH} characters")
    if not _LEGAL_TOPIC_NAME.match(name):
        raise InvalidTopicError(
            f"topic name {name!r} is illegal: only ASCII letters, digits, '.', '_' and '-' are allowed"
        )


def _check_assignment(state: ControllerState, partition_id: int, replicas: Sequence[int], rf: int | None) -> None:
    if not replicas:
        raise InvalidReplicaAssignmentError(f"the assignment of partition {partition_id} is empty")
    if len(set(replicas)) != len(replicas):
        raise InvalidReplicaAssignmentError(f"the assignment of partition {partition_id} repeats a broker")
    if rf is not None and len(replicas) != rf:
        raise InvalidReplicaAssignmentError(
            f"partition {partition_id} has {len(replicas)} replicas where the others have {rf}"
        )
    for broker_id in replicas:
        if state.broker(broker_id) is None:
            raise InvalidReplicaAssignmentError(
                f"the assignment of partition {partition_id} names broker {broker_id}, which is not registered"
            )


# -- topics ---------------------------------------------------------------------------------------------------


def create_topics(ctx: WriteContext, topics: Sequence[NewTopic]) -> ControllerResult[dict[str, TopicOutcome]]:
    """Per-topic outcomes: valid topics are created even when others in the request are refused."""
    records: list[Any] = []
    outcomes: dict[str, TopicOutcome] = {}
    names = [t.name for t in topics]
    for topic in topics:
        if names.count(topic.name) > 1:
            outcomes[topic.name] = TopicOutcome(error=InvalidRequestError(f"topic {topic.name!r} is listed twice"))
            continue
        try:
            topic_records, topic_id, count = _create_topic(ctx, topic, created_here=outcomes)
        except ControllerError as error:
            outcomes[topic.name] = TopicOutcome(error=error)
            continue
        records.extend(topic_records)
        outcomes[topic.name] = TopicOutcome(topic_id, count)
    return ControllerResult(records, outcomes)


def _create_topic(
    ctx: WriteContext, topic: NewTopic, created_here: Mapping[str, TopicOutcome]
) -> tuple[list[Any], str, int]:
    state = ctx.state
    validate_topic_name(topic.name)
    if state.topic_id(topic.name) is not None:
        raise TopicExistsError(f"topic {topic.name!r} already exists")
    collision = _colliding_name(state, topic.name, [n for n, o in created_here.items() if o.error is None])
    if collision is not None:
        raise InvalidTopicError(
            f"topic {topic.name!r} collides with existing topic {collision!r} ('.' and '_' are interchangeable "
            f"in metric names)"
        )
    validate_configs(TOPIC, f"topic {topic.name!r}", topic.configs)
    if topic.assignments is not None:
        if topic.partitions != -1 or topic.replication_factor != -1:
            raise InvalidRequestError("give either an assignment or partitions/replication factor, not both")
        if not topic.assignments:
            raise InvalidReplicaAssignmentError("the assignment names no partition")
        if sorted(topic.assignments) != list(range(len(topic.assignments))):
            raise InvalidReplicaAssignmentError("an assignment must name partitions 0..N-1, each once")
        first = len(topic.assignments[0])
        for partition_id, replicas in topic.assignments.items():
            _check_assignment(state, partition_id, replicas, first)
        placements = [list(topic.assignments[p]) for p in range(len(topic.assignments))]
    else:
        partitions = ctx.config.default_partitions if topic.partitions == -1 else topic.partitions
        rf = ctx.config.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
        if partitions < 1:
            raise InvalidPartitionsError(f"the number of partitions must be at least 1, not {partitions}")
        if rf < 1:
            raise InvalidReplicationFactorError(f"the replication factor must be at least 1, not {rf}")
        if partitions * (rf + 1) > ctx.config.max_records_per_operation:
            raise PolicyViolationError(
                f"creating {partitions} partitions exceeds the {ctx.config.max_records_per_operation} records one "
                f"operation may write: create the topic with fewer partitions and add more with create-partitions"
            )
        placements = place_replicas(usable_brokers(state), partitions, rf, ctx.rng)
    topic_id = ctx.new_uuid()
    records: list[Any] = [mt.TopicRecord(name=topic.name, topic_id=topic_id)]
    records += [
        mt.ConfigRecord(resource_type=TOPIC, resource_name=topic.name, name=name, value=value)
        for name, value in sorted(topic.configs.items())
    ]
    records += [_partition_record(ctx, topic_id, p, replicas) for p, replicas in enumerate(placements)]
    return records, topic_id, len(placements)


def _colliding_name(state: ControllerState, name: str, pending: Iterable[str]) -> str | None:
    """Kafka refuses two topics whose names differ only by '.' versus '_'."""
    if "." not in name and "_" not in name:
        return None
    normalized = name.replace(".", "_")
    for other in [*state.topic_names(), *pending]:
        if other != name and other.replace(".", "_") == normalized:
            return other
    return None


def delete_topics(ctx: WriteContext, names: Sequence[str]) -> ControllerResult[dict[str, TopicOutcome]]:
    records = []
    outcomes: dict[str, TopicOutcome] = {}
    for name in dict.fromkeys(names):
        topic_id = ctx.state.topic_id(name)
        if topic_id is None:
            outcomes[name] = TopicOutcome(error=UnknownTopicError(f"topic {name!r} does not exist"))
            continue
        records.append(mt.RemoveTopicRecord(topic_id=topic_id))
        outcomes[name] = TopicOutcome(topic_id, len(ctx.state.partition_ids(topic_id)))
    return ControllerResult(records, outcomes)


def create_partitions(
    ctx: WriteContext, name: str, total_count: int, assignments: Sequence[Sequence[int]] | None = None
) -> ControllerResult[TopicOutcome]:
    """Grow `name` to `total_count` partitions; new replicas get the replication factor of partition 0."""
    state = ctx.state
    topic_id = state.topic_id(name)
    if topic_id is None:
        raise UnknownTopicError(f"topic {name!r} does not exist")
    existing = state.partition_ids(topic_id)
    current = len(existing)
    if total_count <= current:
        raise InvalidPartitionsError(
            f"topic {name!r} currently has {current} partition(s), which is not fewer than the requested {total_count}"
        )
    added = total_count - current
    first = state.partition(topic_id, existing[0]) if existing else None
    rf = len(first.replicas) if first is not None else ctx.config.default_replication_factor
    if added * (rf + 1) > ctx.config.max_records_per_operation:
        raise PolicyViolationError(
            f"adding {added} partitions exceeds the {ctx.config.max_records_per_operation} records one operation "
            f"may write: add them in several requests"
        )
    if assignments is not None:
        if len(assignments) != added:
            raise InvalidReplicaAssignmentError(
                f"{len(assignments)} assignment(s) given for {added} new partition(s)"
            )
        for offset, replicas in enumerate(assignments):
            _check_assignment(state, current + offset, replicas, rf)
        placements = [list(r) for r in assignments]
    else:
        placements = place_replicas(usable_brokers(state), added, rf, ctx.rng)
    records = [_partition_record(ctx, topic_id, current + i, replicas) for i, replicas in enumerate(placements)]
    return ControllerResult(records, TopicOutcome(topic_id, total_count))


# -- ISR changes and elections -------------------------------------------------------------------------------


def alter_partition(
    ctx: WriteContext, broker_id: int, broker_epoch: int, changes: Sequence[IsrChange]
) -> ControllerResult[list[IsrChangeOutcome]]:
    """ISR changes proposed by a partition leader, each checked against the leader and partition epochs."""
    registered_broker(ctx.state, broker_id, broker_epoch)
    records = []
    outcomes = []
    pending: dict[TopicPartition, PartitionRegistration] = {}
    for change in changes:
        try:
            record, after, key = _isr_change(ctx, broker_id, change, pending)
        except ControllerError as error:
            outcomes.append(IsrChangeOutcome(change.topic, change.partition, error=error))
            continue
        if record is not None:
            records.append(record)
            pending[key] = after
            if record.leader != NO_LEADER_CHANGE:  # e.g. a completed reassignment dropped the leader
                outcomes.append(IsrChangeOutcome(change.topic, change.partition, error=NewLeaderElectedError(
                    f"the change of {change.topic}-{change.partition} elected a new leader ({after.leader}, "
                    f"epoch {after.leader_epoch}): wait for the new partition state"
                )))
                continue
        outcomes.append(IsrChangeOutcome(
            change.topic, change.partition, after.leader, after.leader_epoch, after.partition_epoch, after.isr
        ))
    return ControllerResult(records, outcomes)


def _isr_change(
    ctx: WriteContext, broker_id: int, change: IsrChange, pending: Mapping[TopicPartition, PartitionRegistration]
) -> tuple[Any, PartitionRegistration, TopicPartition]:
    state = ctx.state
    topic_id = state.topic_id(change.topic)
    partition = None if topic_id is None else state.partition(topic_id, change.partition)
    if topic_id is None or partition is None:
        raise UnknownTopicError(f"partition {change.topic}-{change.partition} does not exist")
    key = (topic_id, change.partition)
    if key in pending:
        raise InvalidRequestError(f"partition {change.topic}-{change.partition} is listed twice")
    if partition.leader != broker_id:
        raise NotLeaderOrFollowerError(
            f"broker {broker_id} is not the leader of {change.topic}-{change.partition} (the leader is "
            f"{partition.leader})"
        )
    if change.leader_epoch != partition.leader_epoch:
        raise FencedLeaderEpochError(
            f"leader epoch {change.leader_epoch} of {change.topic}-{change.partition} is not the current "
            f"{partition.leader_epoch}"
        )
    if change.partition_epoch != partition.partition_epoch:
        raise InvalidUpdateVersionError(
            f"partition epoch {change.partition_epoch} of {change.topic}-{change.partition} is not the current "
            f"{partition.partition_epoch}"
        )
    new_isr = tuple(change.new_isr)
    if not new_isr or broker_id not in new_isr:
        raise InvalidRequestError(f"the new ISR {list(new_isr)} must contain the leader {broker_id}")
    if len(set(new_isr)) != len(new_isr):
        raise InvalidRequestError(f"the new ISR {list(new_isr)} repeats a broker")
    for member in new_isr:
        if member not in partition.replicas:
            raise InvalidRequestError(f"broker {member} is not a replica of {change.topic}-{change.partition}")
        if member not in partition.isr and not is_acceptable_leader(state, member):
            raise IneligibleReplicaError(
                f"broker {member} cannot join the ISR of {change.topic}-{change.partition}: it is fenced, "
                f"shutting down or unregistered"
            )
    if change.leader_recovery_state not in (RECOVERED, RECOVERING):
        raise InvalidRequestError(f"unknown leader recovery state {change.leader_recovery_state}")
    if change.leader_recovery_state == RECOVERING and partition.leader_recovery_state == RECOVERED:
        raise InvalidRequestError("a recovered partition cannot go back to RECOVERING")
    if change.leader_recovery_state == RECOVERING and len(new_isr) > 1:
        raise InvalidRequestError("a RECOVERING partition's ISR must be the leader alone")
    record = build_partition_change(
        topic_id, change.partition, partition,
        target_isr=new_isr,
        is_acceptable_leader=lambda b: is_acceptable_leader(state, b),
        metadata_version=ctx.metadata_version,
        recovery_state=change.leader_recovery_state,
        elr=elr_policy(state, topic_id),
        default_directory=lambda b: default_directory(state, b),
    )
    after = partition.merge(record) if record is not None else partition
    return record, after, key


def elect_leaders(
    ctx: WriteContext, election: Election, partitions: Sequence[tuple[str, int]] | None
) -> ControllerResult[dict[str, dict[int, ControllerError | None]]]:
    """Preferred or unclean elections for the named partitions (None: every partition that needs one).

    Unclean elections only happen where the topic (or the cluster default) sets
    unclean.leader.election.enable=true: an unclean leader may have lost acknowledged writes.
    """
    if election is Election.ONLINE:
        raise InvalidRequestError("the election type must be preferred or unclean")
    state = ctx.state
    explicit = partitions is not None
    targets: list[tuple[str, int]] = []
    outcomes: dict[str, dict[int, ControllerError | None]] = {}
    if partitions is None:
        keys = sorted(state.leaderless) if election is Election.UNCLEAN else _imbalanced(state)
        targets = [(state.topic_name(tid) or "", p) for tid, p in keys]
    else:
        targets = list(dict.fromkeys(partitions))
    records = []
    for topic_name, partition_id in targets:
        topic_id = state.topic_id(topic_name)
        partition = None if topic_id is None else state.partition(topic_id, partition_id)
        result: ControllerError | None = None
        if topic_id is None or partition is None:
            result = UnknownTopicError(f"partition {topic_name}-{partition_id} does not exist")
        elif election is Election.PREFERRED:
            record = build_partition_change(
                topic_id, partition_id, partition, election=Election.PREFERRED,
                is_acceptable_leader=lambda b: is_acceptable_leader(state, b),
                metadata_version=ctx.metadata_version, elr=elr_policy(state, topic_id),
            ) if partition.leader != partition.replicas[0] else None
            if partition.leader == partition.replicas[0]:
                result = ElectionNotNeededError(f"{topic_name}-{partition_id} is already led by its preferred replica")
            elif record is None or record.leader != partition.replicas[0]:
                result = PreferredLeaderNotAvailableError(
                    f"the preferred leader {partition.replicas[0]} of {topic_name}-{partition_id} is not in the ISR "
                    f"or not available"
                )
            else:
                records.append(record)
        else:
            result = _unclean(ctx, topic_id, topic_name, partition_id, partition, records)
        if explicit or result is None:
            outcomes.setdefault(topic_name, {})[partition_id] = result
    return ControllerResult(records, outcomes)


def _unclean(
    ctx: WriteContext, topic_id: str, topic_name: str, partition_id: int, partition: PartitionRegistration,
    records: list[Any],
) -> ControllerError | None:
    state = ctx.state
    if partition.leader >= 0:
        return ElectionNotNeededError(f"{topic_name}-{partition_id} has a leader ({partition.leader})")
    if not unclean_election_enabled(state, topic_name):
        return PolicyViolationError(
            f"unclean leader election is not enabled for topic {topic_name!r}: set "
            f"unclean.leader.election.enable=true on it (or cluster-wide) to allow possible data loss"
        )
    record = build_partition_change(
        topic_id, partition_id, partition, election=Election.UNCLEAN,
        is_acceptable_leader=lambda b: is_acceptable_leader(state, b),
        metadata_version=ctx.metadata_version, elr=elr_policy(state, topic_id),
    )
    if record is None or record.leader < 0:
        return EligibleLeadersNotAvailableError(f"no replica of {topic_name}-{partition_id} is available to lead")
    records.append(record)
    return None


def _imbalanced(state: ControllerState) -> list[TopicPartition]:
    """Partitions led by another broker than their preferred (first) replica."""
    found = []
    topics = state.topics
    for topic_id in topics.live_topic_ids():
        for partition_id in topics.partition_ids(topic_id):
            partition = topics.partition(topic_id, partition_id)
            if partition is not None and partition.replicas and partition.leader != partition.replicas[0]:
                found.append((topic_id, partition_id))
    return found


def unclean_election_task(ctx: WriteContext) -> ControllerResult[int]:
    """The periodic electUnclean task: leaders for leaderless partitions of topics that allow it."""
    records: list[Any] = []
    for topic_id, partition_id in sorted(ctx.state.leaderless):
        partition = ctx.state.partition(topic_id, partition_id)
        topic_name = ctx.state.topic_name(topic_id)
        if partition is not None and topic_name is not None and unclean_election_enabled(ctx.state, topic_name):
            _unclean(ctx, topic_id, topic_name, partition_id, partition, records)
    return ControllerResult(records, len(records))
