"""The fleet end to end, all real: three real Apache Kafka clusters (two one-node clusters, `alpha` at
metadata.version 3.9 and `beta`, and the shared three-node cluster whose controllers speak SCRAM over TLS,
`secure`) followed by one `kraftlake follow --fleet` process, with its faults: beta SIGKILLed and restarted, a
cluster unreachable from the start, one whose password is wrong, `secure` added to the file while the others
run. Then the fleet job, submitted with `spark-submit` to a Spark standalone cluster, over every topic (plus one
topic holding garbage, which stops that cluster alone) into ROOT/<cluster> on a real S3 server (SeaweedFS),
registered in a Hive metastore on a real PostgreSQL server, and the fleet views answering the README's five
questions, from `kraftlake sql --fleet` and from a plain Spark session over the metastore's persistent views
alike."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import KafkaException

from kraftlake.bridge.publisher import PublisherConfig, read_tail
from kraftlake.cli.broker import LocalBroker
from kraftlake.cli.kafka_node import KafkaNode, free_ports, kafka_uuid
from kraftlake.lake.errors import LakeError
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.settings.fleet import cluster_location
from tests.fixtures.broker import produce
from tests.fixtures.postgres import Postgres
from tests.fixtures.s3 import S3Store
from tests.fixtures.spark_cluster import SparkCluster
from tests.follow.test_follow import assert_log_in_topic, create_topics
from tests.harness.followers import REPO, log_batches, wait_published
from tests.harness.followers import end_offset as end_of_log
from tests.harness.kafka_cluster import SASL_PASSWORD, SASL_USER, SECURE_MECHANISM, KafkaCluster

pytestmark = pytest.mark.integration
WRONG_PASSWORD = "not-the-password-7f3a"
TOPIC = "kraftlake-metadata-{}"


def kraftlake(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "kraftlake.cli.main", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@dataclass
class Fleet:
    root: Path
    file: Path
    status: Path
    nodes: dict[str, KafkaNode]
    secure: KafkaCluster
    bootstrap: str
    nowhere: int = 0  # a port nothing listens on
    follower_output: str = ""
    warehouse_root: str = ""  # ROOT (default: ROOT/lake on disk)
    store_env: dict[str, str] = field(default_factory=dict)  # the object store's AWS_* settings, once on S3

    def warehouse(self, name: str) -> Warehouse:
        return Warehouse(cluster_location(self.warehouse_root or str(self.root / "lake"), name), self.store_env)

    def write(self, *clusters: str) -> None:
        """The fleet file with these clusters (`CLUSTERS` texts), atomically (a reader never sees half)."""
        text = textwrap.dedent(f"""\
            warehouse_root = "{self.warehouse_root or self.root / 'lake'}"
            checkpoint = "{self.root / 'checkpoint'}"
            """) + "".join(self.cluster_text(name) for name in clusters)
        temporary = self.file.with_suffix(".tmp")
        temporary.write_text(text)
        temporary.replace(self.file)

    def cluster_text(self, name: str) -> str:
        labels = {"alpha": 'env = "prod", region = "eu-west-1"', "beta": 'env = "prod", region = "us-east-1"',
                  "secure": 'env = "staging", region = "eu-west-1"'}.get(name, 'env = "lab"')
        if name in self.nodes:
            source = f'bootstrap_controllers = ["{self.nodes[name].controller_endpoint}"]'
        elif name == "unreachable":
            source = f'bootstrap_controllers = ["127.0.0.1:{self.nowhere}"]\nconnect_timeout_seconds = 2'
        else:  # secure, and badcreds: the secure listener with the wrong password
            password = SASL_PASSWORD if name == "secure" else WRONG_PASSWORD
            assert self.secure.tls is not None
            source = textwrap.dedent(f"""\
                bootstrap_controllers = {json.dumps(self.secure.secure_bootstrap_controllers().split(','))}
                properties = {{ "security.protocol" = "SASL_SSL", "sasl.mechanism" = "{SECURE_MECHANISM}", \
"sasl.username" = "{SASL_USER}", "sasl.password" = "{password}", "ssl.ca.location" = "{self.secure.tls.ca}" }}""")
        return f"\n[clusters.{name}]\n{source}\nlabels = {{ {labels} }}\n"


def node(root: Path, rack: str, release: str | None = None) -> KafkaNode:
    kafka = KafkaNode(root, properties={"broker.rack": rack})
    kafka.format(kafka_uuid(), standalone=True, release_version=release)
    return kafka


@pytest.fixture(scope="module")
def fleet(
    tmp_path_factory: pytest.TempPathFactory, kafka_cluster: KafkaCluster, kafka_broker: LocalBroker
) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("fleet")
    nodes = {"alpha": node(root / "alpha", "eu-west-1c", "3.9-IV0"), "beta": node(root / "beta", "us-east-1a")}
    for kafka in nodes.values():
        kafka.start(wait=False)
    try:
        for kafka in nodes.values():
            kafka.wait_ready()
        yield Fleet(root, root / "fleet.toml", root / "status", nodes, kafka_cluster, kafka_broker.bootstrap_servers,
                    free_ports(1)[0])
    finally:
        for kafka in nodes.values():
            kafka.stop()


def wait_topic(fleet: Fleet, name: str, offset: int, timeout_s: float) -> None:
    """Until cluster `name`'s topic holds `offset` (the follower creates the topic when it starts)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            left = max(1.0, deadline - time.monotonic())
            return wait_published(fleet.bootstrap, TOPIC.format(name), offset, timeout_s=left)
        except KafkaException:
            assert time.monotonic() < deadline, f"cluster {name}'s topic was never created"
            time.sleep(1)


def published_to(fleet: Fleet, name: str) -> int:
    return read_tail(PublisherConfig(fleet.bootstrap, TOPIC.format(name))).next_offset - 1


def status_lines(fleet: Fleet) -> dict[str, str]:
    done = kraftlake("follow", "--status", str(fleet.status), timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(line.split(": ", 1) for line in done.stdout.splitlines())


def wait_status(fleet: Fleet, name: str, text: str, timeout_s: float = 120) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        line = status_lines(fleet).get(name, "")
        if text in line:
            return line
        assert time.monotonic() < deadline, f"cluster {name}'s status never said {text!r}: {line!r}"
        time.sleep(1)


@pytest.fixture(scope="module")
def followed(fleet: Fleet) -> Fleet:
    """`kraftlake follow --fleet` through the faults, then stopped with SIGTERM (its status files stay)."""
    fleet.write("alpha", "beta", "unreachable", "badcreds")
    log = fleet.root / "follow.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "kraftlake.cli.main", "follow", "--fleet", str(fleet.file), "--bootstrap-servers",
         fleet.bootstrap, "--status-file", str(fleet.status), "--log-interval", "1"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    try:
        alpha, beta = fleet.nodes["alpha"], fleet.nodes["beta"]
        create_topics(alpha, "orders", "payments")
        create_topics(beta, "clicks")
        wait_topic(fleet, "alpha", end_of_log(alpha.metadata_dir), timeout_s=120)
        wait_topic(fleet, "beta", end_of_log(beta.metadata_dir), timeout_s=120)
        wait_status(fleet, "unreachable", "FAILED")
        wait_status(fleet, "badcreds", "FAILED")

        # beta crashes: alpha goes on meanwhile; beta is followed into its new epoch once it is back
        beta.kill()
        create_topics(alpha, "refunds")
        wait_topic(fleet, "alpha", end_of_log(alpha.metadata_dir), timeout_s=120)
        beta.start()
        create_topics(beta, "views")
        # a cluster added to the file while the others run (beta's follower catching up meanwhile: the two
        # waits overlap)
        fleet.write("alpha", "beta", "unreachable", "badcreds", "secure")
        secure_node = fleet.secure.node(fleet.secure.brokers()[0])
        create_topics(secure_node, "audit")
        wait_topic(fleet, "beta", end_of_log(beta.metadata_dir), timeout_s=180)
        wait_topic(fleet, "secure", end_of_log(secure_node.metadata_dir), timeout_s=180)

        # a cluster removed from the file stops and its status goes; a file that no longer loads changes nothing
        fleet.write("alpha", "beta", "badcreds", "secure")
        deadline = time.monotonic() + 60
        while "unreachable" in status_lines(fleet):
            assert time.monotonic() < deadline, "the removed cluster's status stayed"
            time.sleep(1)
        fleet.file.write_text(fleet.file.read_text() + "\n[clusters.broken\n")
        deadline = time.monotonic() + 60
        while "go on as they were" not in log.read_text():
            assert time.monotonic() < deadline, "the broken fleet file was never reported"
            time.sleep(0.5)
        create_topics(alpha, "chargebacks")
        wait_topic(fleet, "alpha", end_of_log(alpha.metadata_dir), timeout_s=120)
        fleet.write("alpha", "beta", "badcreds", "secure")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
        fleet.follower_output = log.read_text()
    assert process.returncode == 0, fleet.follower_output[-3000:]
    return fleet


def test_one_follower_follows_every_cluster_through_the_faults(followed: Fleet) -> None:
    fleet = followed
    for name in ("alpha", "beta"):
        kafka = fleet.nodes[name]
        assert assert_log_in_topic(fleet.bootstrap, TOPIC.format(name), log_batches(kafka.metadata_dir)) >= (
            end_of_log(kafka.metadata_dir) - 50)
    secure_node = fleet.secure.node(fleet.secure.brokers()[0])
    assert assert_log_in_topic(fleet.bootstrap, TOPIC.format("secure"), log_batches(secure_node.metadata_dir)) >= (
        end_of_log(secure_node.metadata_dir) - 50)

    lines = status_lines(fleet)
    assert set(lines) == {"alpha", "beta", "badcreds", "secure"}, lines
    assert f"authentication as '{SASL_USER}' with {SECURE_MECHANISM} refused" in lines["badcreds"]
    for name in ("alpha", "beta", "secure"):
        assert "FAILED" not in lines[name] and "published up to offset" in lines[name], lines[name]
        assert published_to(fleet, name) >= 0
    output = fleet.follower_output
    assert "cluster unreachable: no controller answered at" in output
    assert "the 4 clusters running go on as they were" in output  # the broken file
    assert SASL_PASSWORD not in output + "".join(lines.values()) and WRONG_PASSWORD not in output


def test_a_bad_fleet_file_is_one_line_naming_the_file_and_the_cluster(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text('[clusters.ok]\nmetadata_dir = "/nowhere"\n[clusters.bad]\nlabels = { env = "x" }\n')
    done = kraftlake("follow", "--fleet", str(path), "--bootstrap-servers", "127.0.0.1:1", timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"kraftlake follow: {path}: clusters.bad: give bootstrap_controllers (a live quorum) or metadata_dir (a "
        "node's directory), one"]


QUESTIONS = {  # the README's five fleet questions ("Many clusters"), as `kraftlake sql --fleet` runs them
    "offline_last_night": "SELECT cluster, max(offline) AS most_offline FROM fleet_offline_partitions "
                          "WHERE time >= now() - INTERVAL 1 DAY GROUP BY cluster HAVING most_offline > 0",
    "still_on_3_9": "SELECT cluster, level FROM fleet_features WHERE name = 'metadata.version' AND level <= 21",
    "rack": "SELECT cluster, labels['region'] AS region, broker_id, rack FROM fleet_brokers WHERE rack = 'eu-west-1c'",
    "failovers": "SELECT cluster, epoch, time FROM fleet_raft_epochs WHERE time >= now() - INTERVAL 7 DAYS "
                 "ORDER BY cluster, epoch",
    "fenced_by_env": "SELECT labels['env'] AS env, cluster, broker_id, cause, start_time, duration_s "
                     "FROM fleet_fencing_episodes ORDER BY env, cluster, start_time",
}


@pytest.fixture(scope="module")
def materialized(
    followed: Fleet, postgres: Postgres, spark_cluster: SparkCluster, s3_store: S3Store
) -> Iterator[tuple[Fleet, subprocess.CompletedProcess[str]]]:
    """The fleet job (`spark-submit jobs/materialize.py --fleet … --available-now`) on the standalone cluster over
    every topic, one of which holds garbage, into warehouses on S3 and a catalog on PostgreSQL."""
    fleet = followed
    fleet.warehouse_root = s3_store.uri(f"fleet-{fleet.root.name}")
    fleet.store_env = s3_store.storage_options()  # as an operator sets them: the environment (delta-rs, S3A)
    fleet.write("alpha", "beta", "badcreds", "secure")
    produce(fleet.bootstrap, TOPIC.format("garbage"), [((0).to_bytes(8, "big"), b"not a record batch")], partition=0)
    fleet.file.write_text(fleet.file.read_text() + textwrap.dedent(f"""
        [clusters.garbage]
        metadata_dir = "{fleet.root}"

        [catalog]
        jdbc_url = "{postgres.jdbc_url}"
        user = "{postgres.user}"
        password_file = "{postgres.password_file}"
        """))
    done = subprocess.run(
        [*spark_cluster.submit_args(), str(REPO / "jobs" / "materialize.py"), "--fleet", str(fleet.file),
         "--bootstrap-servers", fleet.bootstrap, "--available-now"],
        cwd=fleet.root, env={**spark_cluster.submit_env(), **fleet.store_env}, capture_output=True, text=True,
        timeout=900)
    yield fleet, done


def test_one_job_materializes_every_cluster_and_a_bad_one_stops_alone(
    materialized: tuple[Fleet, subprocess.CompletedProcess[str]]
) -> None:
    fleet, done = materialized
    output = done.stdout + done.stderr  # spark-submit passes its Python driver's stderr on to its stdout
    errors = [line for line in output.splitlines() if line.startswith(("materialize:", "kraftlake"))]
    assert done.returncode == 2, output[-5000:]
    assert any(line.startswith("materialize: cluster garbage: ") for line in errors), errors
    assert errors[-1].startswith("materialize: 1 of 5 clusters stopped (garbage)"), errors  # the job's own line
    for name in ("alpha", "beta", "secure"):
        reader = WarehouseReader(fleet.warehouse(name))
        assert reader.published_range()[1] == published_to(fleet, name), name
    topics = {"alpha": {"orders", "payments", "refunds", "chargebacks"}, "beta": {"clicks", "views"},
              "secure": {"audit"}}
    for name, names in topics.items():
        reader = WarehouseReader(fleet.warehouse(name))
        image = reader.image_at(reader.published_range()[1])
        assert names <= set(image.tables["topics"].column("name").to_pylist()), name
    with pytest.raises(LakeError):  # it stopped at its first message: nothing published
        WarehouseReader(fleet.warehouse("garbage")).published_range()


def assert_the_five_answers(answers: dict[str, list[dict[str, object]]]) -> None:
    """What the test fleet's history says to the README's five questions."""
    assert {row["cluster"] for row in answers["offline_last_night"]} == {"beta"}  # its one node was SIGKILLed
    assert answers["still_on_3_9"] == [{"cluster": "alpha", "level": 21}]
    assert answers["rack"] == [{"cluster": "alpha", "region": "eu-west-1", "broker_id": 1, "rack": "eu-west-1c"}]
    epochs: dict[str, list[object]] = {}
    for row in answers["failovers"]:
        epochs.setdefault(str(row["cluster"]), []).append(row["epoch"])
    assert set(epochs) == {"alpha", "beta", "secure"} and len(epochs["beta"]) >= 2, epochs
    assert {row["cluster"] for row in answers["fenced_by_env"] if row["env"] == "prod"} >= {"beta"}


def test_the_fleet_views_answer_the_five_questions(
    materialized: tuple[Fleet, subprocess.CompletedProcess[str]]
) -> None:
    fleet, _ = materialized
    # and the tables the job registered in the metastore, by name, as any session pointed at it finds them
    catalog = {f"catalog_{name}": f"SELECT count(*) AS rows FROM {name}.partitions_history"
               for name in ("alpha", "beta", "secure")}
    query = " UNION ALL ".join(f"SELECT '{name}' AS question, to_json(struct(*)) AS answer FROM ({sql})"
                               for name, sql in {**QUESTIONS, **catalog}.items())
    # one Spark run for every question (the catalog's tables are the metastore's: Spark's); beside it, each
    # question as users ask it through the default engine (DataFusion, no JVM), and the persistent views the job
    # keeps in the metastore from a plain Spark session: independent processes, started together, then awaited
    plain_session = [sys.executable, "-m", "tests.fleet.catalog_session", "query", str(fleet.file),
                     str(fleet.root / "no-derby"), query]
    with ThreadPoolExecutor(max_workers=len(QUESTIONS) + 2) as pool:
        asking = {name: pool.submit(kraftlake, "sql", "--fleet", str(fleet.file), "--json", sql, timeout=600,
                                    env=fleet.store_env) for name, sql in QUESTIONS.items()}
        plain_run = pool.submit(subprocess.run, plain_session, cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO), **fleet.store_env},
                                capture_output=True, text=True, timeout=900)
        done = kraftlake("sql", "--fleet", str(fleet.file), "--json", "--engine", "spark", query, timeout=900,
                         env=fleet.store_env)
        asked = {name: future.result() for name, future in asking.items()}
        plain = plain_run.result()
    assert done.returncode == 0, done.stderr[-3000:]
    answers: dict[str, list[dict[str, object]]] = {name: [] for name in [*QUESTIONS, *catalog]}
    for line in done.stdout.splitlines():
        row = json.loads(line)  # nothing but the rows on stdout
        answers[row["question"]].append(json.loads(row["answer"]))
    print(json.dumps(answers, indent=1))
    assert "cluster garbage left out" in done.stderr and "cluster badcreds left out" in done.stderr
    assert_the_five_answers(answers)
    assert all(int(str(answers[name][0]["rows"])) > 0 for name in catalog), answers
    # DataFusion: the same answers
    in_process: dict[str, list[dict[str, object]]] = {}
    for name, run in asked.items():
        assert run.returncode == 0, run.stderr[-3000:]
        in_process[name] = [json.loads(line) for line in run.stdout.splitlines()]
        assert len(in_process[name]) == len(answers[name]), (name, in_process[name], answers[name])
    assert_the_five_answers(in_process)
    # the plain Spark session over the metastore's persistent views: the same answers
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert sorted(plain.stdout.splitlines()) == sorted(done.stdout.splitlines())
