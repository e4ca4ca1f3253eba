"""End to end, as users run it: a real sample put into the topic with `kraftlake publish`, the streaming job
submitted to a Spark standalone cluster (`spark-submit --master spark://…`; its executors have no project
code: they run Spark's own Kafka reader) drains it into a warehouse on a real S3 server (SeaweedFS), and
`kraftlake image --json` equals `kraftlake replay --json` at a dense set of offsets. A worker SIGKILLed mid-stream is
survived: the job waits, goes on when a worker returns, and the tables equal an uninterrupted run's. A
snapshot-only sample goes the same way, and through `kraftlake ingest`."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest

from kraftlake.cli.main import main
from kraftlake.lake.warehouse import Warehouse
from tests.fixtures.broker import create_topic
from tests.fixtures.s3 import S3Store
from tests.fixtures.spark_cluster import SparkCluster
from tests.jobs.metadata_topic import drain
from tests.lake.warehouse_state import warehouse_contents

REPO = Path(__file__).resolve().parents[2]
SAMPLE = "rjmfernandes_flink-on-prem/data"
SNAPSHOT_ONLY = "kckoh_xflow/kafka-data"
# Dense where the log is dense with change (the bootstrap, both snapshots' ends), a spread elsewhere.
OFFSETS = sorted({*range(0, 40), *range(7745, 7760), *range(14920, 14932), *range(0, 17027, 331), 17026})
MICRO_BATCH = 3500  # 16,340 messages: 5 micro-batches (two before the worker is lost, three after)
JOB_TIMEOUT_S = 600


def _commits(checkpoint: Path) -> int:
    return sum(1 for entry in (checkpoint / "commits").glob("*") if entry.name.isdigit())


def _wait_for(condition, what: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _cli_answer(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """The exit code and the JSON printed (a refusal, exit 2, prints none)."""
    capsys.readouterr()
    code = main(list(args))
    assert code in (0, 2)
    return code, capsys.readouterr().out


def _option_flags(store: S3Store) -> list[str]:
    return [flag for key, value in store.storage_options().items() for flag in ("--storage-option", f"{key}={value}")]


def assert_image_equals_replay(
    capsys: pytest.CaptureFixture[str], warehouse: str, directory: Path, offsets: list[int], store: S3Store
) -> None:
    for offset in offsets:
        from_lake = _cli_answer(
            capsys, "image", "--warehouse", warehouse, *_option_flags(store), "--at-offset", str(offset), "--json"
        )
        from_log = _cli_answer(capsys, "replay", str(directory), "--to-offset", str(offset), "--json")
        assert from_lake == from_log, f"{directory} at offset {offset}"  # the same image, or both refuse
    assert _cli_answer(capsys, "replay", str(directory), "--to-offset", str(offsets[-1]), "--json")[0] == 0


def _publish(bootstrap: str, directory: Path) -> str:
    topic = create_topic(bootstrap)
    assert main(["publish", str(directory), "--topic", topic, "--bootstrap-servers", bootstrap]) == 0
    return topic


def _submit(
    cluster: SparkCluster, bootstrap: str, topic: str, warehouse: str, root: Path, store: S3Store
) -> subprocess.Popen:
    command = [
        *cluster.submit_args(), str(REPO / "jobs" / "materialize.py"),
        "--bootstrap-servers", bootstrap, "--topic", topic, "--warehouse", warehouse, *_option_flags(store),
        "--checkpoint", str(root / "checkpoint"), "--available-now", "--max-offsets-per-trigger", str(MICRO_BATCH),
        "--idle-publish-seconds", "0",  # an image per micro-batch, as the uninterrupted reference run publishes
        "--no-coalesce-backlog",  # the sample's batches are old: hold none of their images, as the reference
    ]
    with (root / "job.log").open("wb") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=root, env=cluster.submit_env())


def test_the_job_on_a_cluster_survives_losing_its_worker(
    kafka_broker, spark_cluster: SparkCluster, s3_store: S3Store, samples_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    directory = samples_dir / SAMPLE
    topic = _publish(bootstrap, directory)
    warehouse = s3_store.uri(f"cluster-{uuid.uuid4().hex[:8]}")
    checkpoint, log_path = tmp_path / "checkpoint", tmp_path / "job.log"
    job = _submit(spark_cluster, bootstrap, topic, warehouse, tmp_path, s3_store)
    try:
        _wait_for(lambda: _commits(checkpoint) >= 2 or job.poll() is not None,
                  "two micro-batches")
        assert job.poll() is None, log_path.read_text()[-3000:]
        spark_cluster.kill_worker()
        done_at_kill = _commits(checkpoint)
        _wait_for(lambda: spark_cluster.alive_workers() == 0, "the master to lose its worker", 60)
        time.sleep(3)  # how long the job goes without a worker: the fault's length, not a wait for something
        assert job.poll() is None, "the job must wait for a worker, not fail"
        spark_cluster.start_worker()
        assert job.wait(JOB_TIMEOUT_S) == 0, log_path.read_text()[-3000:]
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert done_at_kill < _commits(checkpoint) == 5
    applications = spark_cluster.state()["completedapps"]
    assert any(app["name"] == "kraftlake-materialize" for app in applications), applications

    reference = tmp_path / "uninterrupted" / "warehouse"
    drain(bootstrap, topic, reference, micro_batch=MICRO_BATCH)
    on_s3 = Warehouse(warehouse, s3_store.storage_options())
    assert warehouse_contents(on_s3) == warehouse_contents(Warehouse(reference))
    assert_image_equals_replay(capsys, warehouse, directory, OFFSETS, s3_store)


def test_a_snapshot_only_sample_through_publish_and_through_ingest(
    kafka_broker, spark_cluster: SparkCluster, s3_store: S3Store, samples_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    directory = samples_dir / SNAPSHOT_ONLY
    topic = _publish(kafka_broker.bootstrap_servers, directory)
    streamed = s3_store.uri(f"streamed-{uuid.uuid4().hex[:8]}")
    job = _submit(spark_cluster, kafka_broker.bootstrap_servers, topic, streamed, tmp_path, s3_store)
    assert job.wait(JOB_TIMEOUT_S) == 0, (tmp_path / "job.log").read_text()[-3000:]
    ingested = s3_store.uri(f"ingested-{uuid.uuid4().hex[:8]}")
    assert main(["ingest", str(directory), "--warehouse", ingested, *_option_flags(s3_store)]) == 0
    for warehouse in (streamed, ingested):
        assert_image_equals_replay(capsys, warehouse, directory, [7604], s3_store)
        refused = _refused(capsys, "image", "--warehouse", warehouse, *_option_flags(s3_store), "--at-offset", "7603")
        assert "is before the first published image" in refused


def _refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 2
    return capsys.readouterr().err
