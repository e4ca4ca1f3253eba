"""Arm a crash, run, resume, compare: the streaming job SIGKILLed mid-stream (and at exact sink steps)
then restarted ends with the history, current rows and batches of an uninterrupted ingest of the same log,
and never with a duplicate image."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kraftlake.lake.ingest import ingest
from kraftlake.lake.warehouse import Warehouse
from tests.fixtures.broker import create_topic, produce
from tests.jobs.metadata_topic import batch_messages
from tests.jobs.running import into_micro_batches
from tests.lake.warehouse_state import last_published, warehouse_contents

SAMPLE = "Jeong-Rae_KafkaDemo/kraft-combined-logs"
LOG = f"{SAMPLE}/__cluster_metadata-0/00000000000000000000.log"


def _job(broker, topic: str, tmp_path: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "kraftlake.jobs.materialize",
        "--bootstrap-servers", broker.bootstrap_servers, "--topic", topic,
        "--warehouse", str(tmp_path / "warehouse"), "--checkpoint", str(tmp_path / "checkpoint"),
        "--max-offsets-per-trigger", "250", "--no-coalesce-backlog", *extra,
    ]


def _without_images(contents: dict) -> dict:
    """Image offsets follow micro-batch boundaries, which differ from ingest's, and so do the offsets of image
    checkpoints: compare everything else."""
    return {
        name: rows for name, rows in contents.items() if name != "image_offsets" and not name.endswith("checkpoints")
    }


@pytest.fixture(scope="module")
def reference(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    warehouse = Warehouse(tmp_path_factory.mktemp("reference") / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse)
    return warehouse_contents(warehouse)


@pytest.fixture
def topic(kafka_broker, samples_dir: Path) -> str:
    from kraftlake.records import read_batches

    name = create_topic(kafka_broker.bootstrap_servers)
    produce(kafka_broker.bootstrap_servers, name, batch_messages(read_batches(samples_dir / LOG)))
    return name


def _finish(broker, topic: str, tmp_path: Path) -> dict:
    done = subprocess.run(_job(broker, topic, tmp_path, "--available-now"), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return warehouse_contents(Warehouse(tmp_path / "warehouse"))


def test_sigkill_mid_stream_then_restart(kafka_broker, topic: str, tmp_path: Path, reference: dict) -> None:
    rng = random.Random(11)
    for _ in range(2):
        before = last_published(tmp_path / "warehouse")
        job = subprocess.Popen(
            _job(kafka_broker, topic, tmp_path, "--trigger-seconds", "0.5"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        into_micro_batches(job, tmp_path / "warehouse", rng, before)
        job.send_signal(signal.SIGKILL)
        job.wait()
    contents = _finish(kafka_broker, topic, tmp_path)
    assert _without_images(contents) == _without_images(reference)
    assert len(contents["image_offsets"]) == len(set(contents["image_offsets"]))


def test_sigkill_at_a_sink_step_then_restart(kafka_broker, topic: str, tmp_path: Path, reference: dict) -> None:
    env = {**os.environ, "KRAFTLAKE_FAILPOINT": "sink.between_history_and_current:3"}
    crashed = subprocess.run(
        _job(kafka_broker, topic, tmp_path, "--available-now"), env=env, capture_output=True, text=True
    )
    assert crashed.returncode == -signal.SIGKILL
    contents = _finish(kafka_broker, topic, tmp_path)
    assert _without_images(contents) == _without_images(reference)
    assert len(contents["image_offsets"]) == len(set(contents["image_offsets"]))


def test_sigterm_mid_stream_stops_cleanly_then_restart(kafka_broker, topic: str, tmp_path: Path,
                                                       reference: dict) -> None:
    """A service manager's stop: SIGTERM ends the query, exit 0 (not the signal's -15), and the resumed job
    ends where an uninterrupted one does."""
    job = subprocess.Popen(_job(kafka_broker, topic, tmp_path, "--trigger-seconds", "0.5"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    into_micro_batches(job, tmp_path / "warehouse", random.Random(12))
    job.send_signal(signal.SIGTERM)
    _, stderr = job.communicate(timeout=120)
    assert job.returncode == 0, stderr[-2000:]
    contents = _finish(kafka_broker, topic, tmp_path)
    assert _without_images(contents) == _without_images(reference)
    assert len(contents["image_offsets"]) == len(set(contents["image_offsets"]))
