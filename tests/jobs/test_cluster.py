"""The streaming job on a Spark standalone cluster: `spark-submit --master spark://…` runs it there (its
executors import the project from `--py-files` only), a published real sample drains into the warehouse,
and a worker SIGKILLed mid-stream is survived: the job waits, goes on when a worker returns, and the
tables equal an uninterrupted run's."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from jobs.time_travel import image_at_offset
from jobs.warehouse import Warehouse
from kraftlake.cli import main
from replay.canonical import canonical_json
from replay.log_replay import replay_paths
from tests.fixtures.broker import create_topic
from tests.fixtures.spark_cluster import SparkCluster
from tests.jobs.metadata_topic import drain
from tests.jobs.warehouse_state import warehouse_contents

REPO = Path(__file__).resolve().parents[2]
SAMPLE = "rjmfernandes_flink-on-prem/data"
MICRO_BATCH = 1500  # 16,340 messages: 11 micro-batches
JOB_TIMEOUT_S = 600


def _commits(checkpoint: Path) -> int:
    return sum(1 for entry in (checkpoint / "commits").glob("*") if entry.name.isdigit())


def _wait_for(condition, what: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_the_job_on_a_cluster_survives_losing_its_worker(
    kafka_broker, spark_cluster: SparkCluster, samples_dir: Path, tmp_path: Path
) -> None:
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    directory = samples_dir / SAMPLE
    assert main(["publish", str(directory), "--topic", topic, "--bootstrap-servers", bootstrap]) == 0
    warehouse, checkpoint = tmp_path / "warehouse", tmp_path / "checkpoint"
    command = [
        *spark_cluster.submit_args(), str(REPO / "jobs" / "materialize.py"),
        "--bootstrap-servers", bootstrap, "--topic", topic, "--warehouse", str(warehouse),
        "--checkpoint", str(checkpoint), "--available-now", "--max-offsets-per-trigger", str(MICRO_BATCH),
    ]
    log_path = tmp_path / "job.log"
    with log_path.open("wb") as log:
        job = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
                               env=spark_cluster.submit_env())
    try:
        _wait_for(lambda: _commits(checkpoint) >= 2 or job.poll() is not None,
                  "two micro-batches")
        assert job.poll() is None, log_path.read_text()[-3000:]
        spark_cluster.kill_worker()
        done_at_kill = _commits(checkpoint)
        _wait_for(lambda: spark_cluster.alive_workers() == 0, "the master to lose its worker", 60)
        time.sleep(3)
        assert job.poll() is None, "the job must wait for a worker, not fail"
        spark_cluster.start_worker()
        assert job.wait(JOB_TIMEOUT_S) == 0, log_path.read_text()[-3000:]
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert done_at_kill < _commits(checkpoint) == 11
    applications = spark_cluster.state()["completedapps"]
    assert any(app["name"] == "kraftlake-materialize" for app in applications), applications

    reference = tmp_path / "uninterrupted" / "warehouse"
    drain(bootstrap, topic, reference, micro_batch=MICRO_BATCH)
    assert warehouse_contents(Warehouse(warehouse)) == warehouse_contents(Warehouse(reference))
    for offset in (4, 7751, 7752, 12000, 14926, 17026):
        from_delta = canonical_json(image_at_offset(Warehouse(warehouse), offset).to_image(), provenance=False)
        assert from_delta == canonical_json(replay_paths([directory], offset).image, provenance=False), offset
