"""`kraftlake follow` against a real Apache Kafka node over TCP: every committed batch lands in the topic once,
in order, byte-identical to the node's own `__cluster_metadata-0/*.log` (Kafka is the oracle); restarts of
the follower (SIGTERM, SIGKILL) resume without duplicates; a node SIGKILLed and restarted under the follower
is followed into its new epoch; a fresh follower of a node that deleted its old log starts from the snapshot,
and the warehouse built from the topic equals the replay of the node's own directory; bad endpoints stop it
with one line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from kraftlake.bridge.publisher import PublisherConfig, read_tail
from kraftlake.cli.kafka_node import KafkaNode, free_ports, kafka_uuid
from kraftlake.follow.client import ControllerConnection, Endpoint, Versions, parse_endpoints
from kraftlake.follow.observer import FetchedSnapshot, Observer, ObserverConfig
from kraftlake.follow.status import read_status
from kraftlake.image_schema.canonical import canonical_json
from kraftlake.lake.errors import TimeTravelError
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import decode_batch
from kraftlake.records.batch import read_header
from kraftlake.records.files import SnapshotId
from kraftlake.records.topic import decode_key, ends_snapshot, snapshot_of, starts_snapshot
from kraftlake.replay.log_replay import replay_paths
from kraftlake.settings.jars import jar_dir
from tests.fixtures.broker import create_topic
from tests.harness.followers import (
    REPO,
    SHORT_HISTORY,
    FollowProcess,
    Linker,
    PublishFollowProcess,
    assert_log_in_topic,
    log_batches,
    log_start,
    wait_published,
)
from tests.harness.followers import end_offset as end_of_log
from tests.harness.kafka_cluster import (
    SASL_CLIENT,
    SASL_MECHANISM,
    SASL_PASSWORD,
    SASL_USER,
    SECURE_MECHANISM,
    KafkaCluster,
)
from tests.harness.kafka_oracle import kafka_image, kafka_snapshots
from tests.harness.tls import make_ca
from tests.jobs.metadata_topic import drain, topic_messages


def run_follow(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "kraftlake.cli.main", "follow", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module", autouse=True)
def short_history_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """A node that snapshots every 2 s and keeps 1 s of history. Kafka's Raft client deletes old segments
    from a cleaner that runs once a minute, so it starts first (without waiting for it) and ages while the
    other tests run. At the latest metadata.version (4.4 writes RegisterBrokerRecord v4), and its warehouse is
    compared with the replay of its directory."""
    kafka = KafkaNode(tmp_path_factory.mktemp("short-history-node"), properties=SHORT_HISTORY)
    kafka.format(kafka_uuid(), standalone=True)
    kafka.start(wait=False)
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """A one-node cluster (broker + controller, standalone quorum) of the module's own: a test SIGKILLs it."""
    kafka = KafkaNode(tmp_path_factory.mktemp("kafka-node"))
    kafka.format(kafka_uuid(), standalone=True)
    kafka.start()
    try:
        yield kafka
    finally:
        kafka.stop()


def create_topics(node: KafkaNode, *names: str, timeout_s: float = 120.0) -> None:
    """Creates the topics through `node`, asking again with a new client when a request times out: right after
    a controller failover a node's metadata may still name the killed node as the controller, and a client
    that learned it waits for that node until its request times out (seen in CI: `Failed while waiting for
    controller`). A topic that exists by then was created by a request that timed out on its way back."""
    deadline = time.monotonic() + timeout_s
    pending, retry = list(names), False
    while pending:
        admin = AdminClient({"bootstrap.servers": node.bootstrap_servers})
        futures = admin.create_topics([NewTopic(name, 3, 1) for name in pending], request_timeout=15.0)
        for name, future in futures.items():
            try:
                future.result(timeout=30)
                pending.remove(name)
            except KafkaException as error:
                code = error.args[0].code()
                if retry and code == KafkaError.TOPIC_ALREADY_EXISTS:
                    pending.remove(name)
                elif code != KafkaError._TIMED_OUT or time.monotonic() > deadline:
                    raise
        retry = True


def end_offset(node: KafkaNode) -> int:
    return end_of_log(node.metadata_dir)


def test_every_committed_batch_once_in_order_byte_identical_across_restarts(node: KafkaNode, kafka_broker) -> None:
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    follower = FollowProcess(node.controller_endpoint, bootstrap, topic, "--log-interval", "1").start()
    create_topics(node, "orders", "payments")
    admin = AdminClient({"bootstrap.servers": node.bootstrap_servers})
    change = ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("topic", "orders", incremental_configs=[change])
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    wait_published(bootstrap, topic, end_offset(node))

    # commit -> published latency on an otherwise idle node: a topic created, then seen in the topic
    started = time.monotonic()
    create_topics(node, "latency")
    created_at = end_offset(node)
    wait_published(bootstrap, topic, created_at, timeout_s=10)
    print(f"\ncreate_topics -> published: {time.monotonic() - started:.3f} s")

    assert follower.finish(signal.SIGTERM) == 0
    assert b"stopped: topic" in follower.output and b"leader 1 (epoch" in follower.output
    last = assert_log_in_topic(bootstrap, topic, log_batches(node.metadata_dir))
    assert last >= created_at

    # a rerun resumes where the topic ends; a follower SIGKILLed mid-run too
    follower = FollowProcess(node.controller_endpoint, bootstrap, topic).start()
    wait_published(bootstrap, topic, last + 5)
    follower.finish(signal.SIGKILL)
    assert b"fetching from offset %d" % (last + 1) in follower.output
    follower = FollowProcess(node.controller_endpoint, bootstrap, topic).start()
    create_topics(node, "after-restart")
    wait_published(bootstrap, topic, end_offset(node))
    assert follower.finish() == 0
    assert assert_log_in_topic(bootstrap, topic, log_batches(node.metadata_dir)) > last + 5


def test_a_node_sigkilled_and_restarted_under_the_follower(node: KafkaNode, kafka_broker) -> None:
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    follower = FollowProcess(node.controller_endpoint, bootstrap, topic).start()
    wait_published(bootstrap, topic, end_offset(node))
    node.kill()
    follower.wait_for(b"cannot connect", b"closed the connection")  # it finds nobody at the endpoint, retries
    node.start()  # same ports, same data
    create_topics(node, "after-crash")
    wait_published(bootstrap, topic, end_offset(node), timeout_s=90)
    assert follower.finish() == 0
    assert b"leader change" in follower.output
    assert assert_log_in_topic(bootstrap, topic, log_batches(node.metadata_dir)) >= end_offset(node) - 50


def highest_version(message_class: str) -> int:
    """HIGHEST_SUPPORTED_VERSION of one of Kafka's generated message classes, from the jar the node runs."""
    jar = next(jar_dir("kafka").glob("kafka-clients-*.jar"))
    command = ["javap", "-cp", str(jar), "-constants", f"org.apache.kafka.common.message.{message_class}"]
    listing = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    found = re.search(r"HIGHEST_SUPPORTED_VERSION = (\d+)", listing)
    assert found is not None, listing
    return int(found.group(1))


def test_versions_negotiated_are_the_highest_kafka_speaks(node: KafkaNode) -> None:
    """ApiVersions against the node: Kafka 4.4's newest Fetch (18) and FetchSnapshot (1), as its jar says."""
    connection = ControllerConnection(Endpoint("127.0.0.1", node.controller_port), timeout_s=10)
    try:
        assert connection.versions == Versions(highest_version("FetchRequestData"),
                                               highest_version("FetchSnapshotRequestData"))
    finally:
        connection.close()


def test_bad_endpoints_stop_with_one_line(node: KafkaNode, kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    common = ["--bootstrap-servers", bootstrap, "--topic", create_topic(bootstrap)]
    broker = run_follow("--bootstrap-controllers", node.bootstrap_servers, *common)
    assert broker.returncode == 2
    assert broker.stderr.strip().splitlines()[-1].startswith(
        f"kraftlake follow: {node.bootstrap_servers}: not a KRaft controller listener"
    )
    down = f"127.0.0.1:{free_ports(1)[0]}"
    nobody = run_follow("--bootstrap-controllers", down, "--connect-timeout", "1", *common)
    assert nobody.returncode == 2
    assert f"kraftlake follow: no controller answered at {down} within 1 s" in nobody.stderr.splitlines()[-1]
    other = run_follow("--bootstrap-controllers", node.controller_endpoint, "--cluster-id",
                       "b3RoZXItY2x1c3Rlci1pZA", *common)
    assert other.returncode == 2
    assert f"{node.controller_endpoint}, offset 0: Fetch refused with INCONSISTENT_CLUSTER_ID" in other.stderr
    garbage = run_follow("--bootstrap-controllers", "nohost", *common)
    assert garbage.returncode == 2 and "'nohost' in 'nohost': not HOST:PORT" in garbage.stderr


def assert_snapshot_in_small_chunks(kafka: KafkaNode) -> None:
    """FetchSnapshot with 200 bytes a response: the chunks make up the snapshot file, whole batches from its
    SnapshotHeader to its SnapshotFooter (Kafka's file, where it still has it)."""
    endpoints = tuple(parse_endpoints(kafka.controller_endpoint))
    observer = Observer(ObserverConfig(endpoints, max_bytes=200), 0, 0)
    try:
        fetched = [item for _ in range(20) for item in observer.poll() if isinstance(item, FetchedSnapshot)]
    finally:
        observer.close()
    assert fetched, "the leader never offered its snapshot to a fetch at offset 0"
    snapshot = fetched[0]
    data = b"".join(batch.raw for batch in snapshot.batches)
    assert len(data) > 5 * 200
    assert starts_snapshot(decode_batch(snapshot.batches[0].raw))
    assert ends_snapshot(decode_batch(snapshot.batches[-1].raw))
    offsets = [(b.header.base_offset, b.header.last_offset) for b in snapshot.batches]
    assert offsets[0][0] == 0 and all(base == last + 1 for (_, last), (base, _) in pairwise(offsets))
    on_disk = kafka.metadata_dir / snapshot.snapshot_id.file_name()
    if on_disk.exists():  # Kafka's cleaner may have deleted it since (a newer snapshot covers it)
        assert data == on_disk.read_bytes()


def test_publish_follow_tails_a_live_directory_past_kafkas_retention(
    short_history_node: KafkaNode, kafka_broker, tmp_path: Path
) -> None:
    """`kraftlake publish DIR --follow` on the node's own directory while it runs, rolls a segment a second,
    snapshots every 2 s and deletes what a snapshot covers: every batch once, in order, byte for byte; a
    follower SIGKILLed while Kafka deletes what it had not read yet continues from the snapshot that replaced
    it; the warehouse built from the topic answers offsets the node no longer has, equal to Kafka's own image
    (the oracle, run on hard links of every file the node wrote) at every offset where a record changes it.
    `kraftlake follow` (the network observer) runs beside it all along into its own topic: its warehouse
    holds the whole log from offset 0, every offset the node deleted included."""
    kafka = short_history_node
    kafka.wait_ready()
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    status = tmp_path / "follow.status"
    observed = create_topic(bootstrap)
    with Linker(lambda: [(kafka.metadata_dir, tmp_path / "all-files")]):
        observer = FollowProcess(kafka.controller_endpoint, bootstrap, observed).start()
        tail = PublishFollowProcess(kafka.metadata_dir, bootstrap, topic, "--status-file", str(status)).start()
        try:
            create_topics(kafka, "tail-before")
            wait_published(bootstrap, topic, end_offset(kafka))
            shown = run_follow("--status", str(status))
            assert shown.returncode == 0 and re.match(r"FOLLOWING: offset \d+, end of log \d+, lag \d+", shown.stdout)
            tail.finish(signal.SIGKILL)
            read_before = read_tail(PublisherConfig(bootstrap, topic)).next_offset
            create_topics(kafka, "tail-while-down")
            deadline = time.monotonic() + 150  # Kafka's cleaner runs once a minute
            while log_start(kafka.metadata_dir) <= read_before:
                assert time.monotonic() < deadline, f"Kafka never deleted offset {read_before}"
                time.sleep(0.5)
            tail = PublishFollowProcess(kafka.metadata_dir, bootstrap, topic, "--status-file", str(status)).start()
            create_topics(kafka, "tail-after")
            last = end_offset(kafka)
            wait_published(bootstrap, topic, last)
            wait_published(bootstrap, observed, last)
            shown = run_follow("--status", str(status))  # rewritten every second; the gap came at the start
            assert tail.finish() == 0 and observer.finish() == 0
        finally:  # whatever failed, no follower outlives the test
            for process in (tail, observer):
                process.finish(signal.SIGKILL)
    assert log_start(kafka.metadata_dir) > read_before

    # the topic: the log from 0 up to where the first run stopped, then a whole snapshot, then the log on (on a
    # slow machine Kafka's cleaner may have deleted the log's start before the first run: it starts with a snapshot)
    everything = log_batches(tmp_path / "all-files")
    messages = topic_messages(bootstrap, topic)
    leading = snapshot_of(messages[0].key)
    expected, snapshots = 0, list[SnapshotId]()
    for message in messages:
        snapshot = snapshot_of(message.key)
        if snapshot is not None:
            if not snapshots or snapshots[-1] != snapshot:
                snapshots.append(snapshot)
                expected = snapshot.end_offset
            continue
        assert decode_key(message.key) == expected and message.value == everything[expected]
        expected = read_header(message.value, 0, topic).last_offset + 1
    bridge = snapshots[-1]
    assert snapshots in ([bridge], [leading, bridge]) and bridge.end_offset > read_before and expected > last
    bridged = bridge.bridges(read_before - 1)  # None: Kafka kept the log up to the snapshot's own offset
    gaps = [f"gap: offsets {bridged[0]}..{bridged[1]} were deleted by Kafka before they were read (a gap, "
            f"bridged by the snapshot at offset {bridge.end_offset - 1})"] if bridged is not None else []
    assert all(gap in tail.output.decode() for gap in gaps), tail.output  # logged, and said by `follow --status`
    assert shown.returncode == 0 and shown.stdout.startswith("FOLLOWING: offset "), shown
    assert [line.split("; noticed ")[0] for line in shown.stdout.splitlines()[1:]] == gaps, shown

    # the network observer's topic: Kafka's snapshot (a fetch at offset 0 is answered with it), then the log
    # from its end, byte for byte
    observed_messages = topic_messages(bootstrap, observed)
    start = snapshot_of(observed_messages[0].key)
    assert isinstance(start, SnapshotId)
    observed_log = [m for m in observed_messages if snapshot_of(m.key) is None and decode_key(m.key) <= last]
    assert [decode_key(m.key) for m in observed_log] == sorted(o for o in everything if start.end_offset <= o <= last)
    assert all(m.value == everything[decode_key(m.key)] for m in observed_log)

    # the warehouses answer offsets the node deleted, as Kafka's own image there
    kafka_images = kafka_snapshots(tmp_path / "all-files", tmp_path / "oracle")
    tail_start = -1 if leading is None else leading.end_offset - 1
    in_tail = [o for o in sorted(kafka_images) if tail_start <= o < read_before or bridge.end_offset <= o <= last]
    in_observed = [o for o in sorted(kafka_images) if start.end_offset - 1 <= o <= last]
    deleted = log_start(kafka.metadata_dir)
    # Kafka publishes once per batch: a handful of states here (5 seen), some of them offsets the node deleted
    assert any(o < deleted for o in in_tail) and len(in_tail) >= 3 and in_observed[0] < deleted
    for name, answered in ((topic, in_tail), (observed, in_observed)):
        drain(bootstrap, name, tmp_path / name, micro_batch=50)
        warehouse = Warehouse(tmp_path / name)
        for offset in answered:
            ours = WarehouseReader(warehouse).image_at(offset).to_image()
            theirs = kafka_image(kafka_images[offset])
            assert canonical_json(ours, provenance=False) == canonical_json(theirs, provenance=False), offset
    said = [(gap.first, gap.last, gap.snapshot_end_offset) for gap in read_status(status).gaps]
    assert [(g.first, g.last, g.snapshot_end_offset) for g in WarehouseReader(Warehouse(tmp_path / topic)).gaps()] \
        == said  # the tail's warehouse records the gaps `follow --status` states
    first = start.end_offset - 1
    with pytest.raises(TimeTravelError, match=rf"offset 0 is before the first published image \(offset {first}\)"):
        WarehouseReader(warehouse).image_at(0)  # the observer's: nothing before Kafka's snapshot is invented


def test_a_fresh_follower_starts_from_the_snapshot_when_kafka_deleted_the_log(
    short_history_node: KafkaNode, kafka_broker, tmp_path: Path
) -> None:
    kafka = short_history_node
    kafka.wait_ready()
    create_topics(kafka, "early")
    deadline = time.monotonic() + 120
    while (kafka.metadata_dir / "00000000000000000000.log").exists():
        assert time.monotonic() < deadline, "Kafka never deleted its first segment"
        time.sleep(0.5)
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    follower = FollowProcess(kafka.controller_endpoint, bootstrap, topic).start()
    create_topics(kafka, "late")
    wait_published(bootstrap, topic, end_offset(kafka))
    assert follower.finish() == 0
    assert_snapshot_in_small_chunks(kafka)
    kafka.stop()  # its directory stays as it is for the comparisons

    messages = topic_messages(bootstrap, topic)
    snapshot = snapshot_of(messages[0].key)
    assert isinstance(snapshot, SnapshotId) and snapshot.end_offset > 0
    in_snapshot = [m for m in messages if snapshot_of(m.key) == snapshot]
    assert messages[: len(in_snapshot)] == in_snapshot
    assert starts_snapshot(decode_batch(in_snapshot[0].value)) and ends_snapshot(decode_batch(in_snapshot[-1].value))
    snapshot_file = kafka.metadata_dir / snapshot.file_name()
    if snapshot_file.exists():  # Kafka may have deleted it since: a newer one covers it
        assert b"".join(m.value for m in in_snapshot) == snapshot_file.read_bytes()
    last = assert_log_in_topic(bootstrap, topic, log_batches(kafka.metadata_dir), first=snapshot.end_offset)

    # the streaming job's driver over the followed topic builds what replaying the node's own directory gives
    drain(bootstrap, topic, tmp_path / "warehouse", micro_batch=50)
    warehouse = Warehouse(tmp_path / "warehouse")
    assert WarehouseReader(warehouse).images()[0].snapshot
    from_delta = canonical_json(WarehouseReader(warehouse).image_at(last).to_image(), provenance=False)
    from_replay = canonical_json(replay_paths([kafka.metadata_dir], last).image, provenance=False)
    assert from_delta == from_replay
    assert '"late"' in from_delta


def test_sasl_scram_against_a_real_sasl_listener(kafka_cluster: KafkaCluster, kafka_broker, tmp_path: Path) -> None:
    """SaslHandshake + SaslAuthenticate (SCRAM-SHA-512) against the cluster's SASL_PLAINTEXT listener, whose
    principal Kafka created at format time: the right password gets past authentication (to the check that
    the listener is a controller's, which a broker's is not), a wrong one stops with one line naming the
    endpoint; neither password is printed. The settings come as Kafka's client properties (sasl.jaas.config)
    and as librdkafka's names (sasl.username/sasl.password)."""
    bootstrap = kafka_broker.bootstrap_servers
    listener = kafka_cluster.sasl_bootstrap_servers(kafka_cluster.brokers()[0])
    common = ["--bootstrap-controllers", listener, "--bootstrap-servers", bootstrap, "--topic", create_topic(bootstrap)]
    properties = tmp_path / "client.properties"
    properties.write_text("".join(f"{key}={value}\n" for key, value in SASL_CLIENT.items()))
    admitted = run_follow(*common, "--security-file", str(properties))
    assert admitted.returncode == 2
    assert f"kraftlake follow: {listener}: not a KRaft controller listener" in admitted.stderr.splitlines()[-1]
    wrong = run_follow(*common, "--security", "security.protocol=SASL_PLAINTEXT", "--security",
                       f"sasl.mechanism={SASL_MECHANISM}", "--security", f"sasl.username={SASL_USER}",
                       "--security", "sasl.password=not-the-password")
    assert wrong.returncode == 2
    assert wrong.stderr.splitlines()[-1].startswith(
        f"kraftlake follow: {listener}: authentication as '{SASL_USER}' with {SASL_MECHANISM} refused")
    for done in (admitted, wrong):
        assert SASL_PASSWORD not in done.stderr + done.stdout and "not-the-password" not in done.stderr + done.stdout


def test_a_controller_failover_under_the_follower(kafka_cluster: KafkaCluster, kafka_broker) -> None:
    """Three controllers (the session's shared cluster, left whole): the follower finds the leader from the
    bootstrap list, follows it, and when the leader is SIGKILLed goes on with the newly elected one; the
    topic is the survivors' log, byte for byte.

    Then the old leader, restarted, is the first controller a SCRAM-over-TLS follower asks. It learned the new
    leader from a Fetch on the nodes' own (PLAINTEXT) listener, so on its SASL_SSL listener it names the leader
    without an endpoint: the follower must ask on, not take it for the leader (it once did, and asked it for
    ever: the SCRAM-over-TLS test stalled whenever it ran after this one and node 1 had been the leader).
    Its stall timeout is far off, so only finding the leader gets it there in time."""
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    follower = FollowProcess(kafka_cluster.bootstrap_controllers, bootstrap, topic).start()
    old = kafka_cluster.active_controller()
    survivor = kafka_cluster.node(next(node_id for node_id in kafka_cluster.nodes if node_id != old))
    create_topics(survivor, "before-failover")
    wait_published(bootstrap, topic, end_offset(survivor))
    kafka_cluster.kill(old)
    try:
        new = kafka_cluster.wait_for_new_leader(old)
        create_topics(survivor, "after-failover")
        wait_published(bootstrap, topic, end_offset(survivor), timeout_s=90)
        assert follower.finish() == 0
    finally:
        follower.finish()
        kafka_cluster.restart(old)
    assert b"leader change: offset" in follower.output
    assert f"leader {new} (epoch".encode() in follower.output
    assert assert_log_in_topic(bootstrap, topic, log_batches(survivor.metadata_dir)) >= end_offset(survivor) - 50

    restarted_first = [f"127.0.0.1:{kafka_cluster.secure_ports[old]}"] + [
        f"127.0.0.1:{port}" for node_id, port in kafka_cluster.secure_ports.items() if node_id != old]
    topic = create_topic(bootstrap)
    follower = FollowProcess(",".join(restarted_first), bootstrap, topic, *secure_login(kafka_cluster),
                             "--stall-timeout", "600").start()
    try:
        wait_published(bootstrap, topic, end_offset(survivor), timeout_s=60)
        assert follower.finish() == 0
    finally:
        follower.finish(signal.SIGKILL)
    assert b"STALLED" not in follower.output, follower.output
    assert f"leader {new} (epoch".encode() in follower.output


def secure_login(cluster: KafkaCluster) -> list[str]:
    """`--security` settings for the cluster's SASL_SSL controller listener: SCRAM-SHA-256 as the super user, the
    cluster's CA trusted."""
    assert cluster.tls is not None
    settings = {"security.protocol": "SASL_SSL", "sasl.mechanism": SECURE_MECHANISM, "sasl.username": SASL_USER,
                "sasl.password": SASL_PASSWORD, "ssl.ca.location": str(cluster.tls.ca)}
    return [arg for key, value in settings.items() for arg in ("--security", f"{key}={value}")]


def test_scram_sha_256_over_tls_on_a_controller_listener(
    kafka_cluster: KafkaCluster, kafka_broker, tmp_path: Path
) -> None:
    """The shared cluster's second controller listener is SASL_SSL (SCRAM-SHA-256, a certificate from a CA
    made at fixture time): the follower trusts that CA, logs in as the SCRAM super user (CLUSTER_ACTION) and
    follows, byte for byte; a CA that did not sign the certificate stops it with one line naming the endpoint,
    before any password is sent; no password is printed."""
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    login = secure_login(kafka_cluster)
    secure = kafka_cluster.secure_bootstrap_controllers()
    follower = FollowProcess(secure, bootstrap, topic, *login).start()
    node = kafka_cluster.node(kafka_cluster.brokers()[0])
    try:
        create_topics(node, "over-tls")
        try:
            wait_published(bootstrap, topic, end_offset(node))
        except AssertionError as stalled:  # say what the follower said
            follower.finish()
            raise AssertionError(f"{stalled}; the follower wrote: {follower.output.decode()[-3000:]}") from None
        assert follower.finish() == 0, follower.output
    finally:
        follower.finish(signal.SIGKILL)
    assert assert_log_in_topic(bootstrap, topic, log_batches(node.metadata_dir)) >= end_offset(node) - 50

    other_ca, _ = make_ca(tmp_path, "not-the-cluster-ca")
    endpoint = secure.split(",")[0]
    wrong = run_follow("--bootstrap-controllers", endpoint, "--bootstrap-servers", bootstrap, "--topic", topic,
                       *login, "--security", f"ssl.ca.location={other_ca}")  # the last ssl.ca.location counts
    assert wrong.returncode == 2
    assert wrong.stderr.splitlines()[-1].startswith(f"kraftlake follow: {endpoint}: TLS handshake failed"), wrong
    for output in (follower.output.decode(), wrong.stdout + wrong.stderr):
        assert SASL_PASSWORD not in output


def test_the_topics_broker_sigkilled_and_restarted_under_the_follower(
    kafka_cluster: KafkaCluster, node: KafkaNode
) -> None:
    """The metadata topic on the module's own node, the shared cluster followed: the topic's broker SIGKILLed
    while the cluster changes is ridden out (the idempotent producer re-sends what was in flight once the
    broker is back; a broker gone past the delivery timeout ends the producer session instead, and the next
    resumes from the topic's tail), and the topic holds the cluster's log once by offset, byte for byte,
    across the gap."""
    bootstrap, topic = node.bootstrap_servers, create_topic(node.bootstrap_servers)
    followed = kafka_cluster.node(kafka_cluster.brokers()[0])
    follower = FollowProcess(kafka_cluster.bootstrap_controllers, bootstrap, topic).start()
    try:
        create_topics(followed, "before-broker-crash")
        wait_published(bootstrap, topic, end_offset(followed))
        node.kill()
        create_topics(followed, "while-broker-down")
        time.sleep(3)  # the follower meets the dead broker
        node.start()
        create_topics(followed, "after-broker-crash")
        wait_published(bootstrap, topic, end_offset(followed), timeout_s=90)
        assert follower.finish() == 0, follower.output
    finally:
        follower.finish(signal.SIGKILL)
    assert assert_log_in_topic(bootstrap, topic, log_batches(followed.metadata_dir)) >= end_offset(followed) - 50
