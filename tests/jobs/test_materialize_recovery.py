"""Arm a crash, run, resume, compare: the streaming job SIGKILLed at an exact sink step, then SIGKILLed and
SIGTERMed mid-stream, each time restarted, ends with the history, current rows and batches of an
uninterrupted ingest of the same log, and never with a duplicate image (one test: four job starts, not seven)."""

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


def _restarted(broker, topic: str, tmp_path: Path, rng: random.Random, log: Path) -> subprocess.Popen:
    """The streaming job restarted on the warehouse and checkpoint (its stderr to `log`, a file: a pipe
    nobody reads would fill and stall it), returned once it has published an image past the last one before
    it started, plus a random 0-2 s."""
    before = last_published(tmp_path / "warehouse")
    with log.open("wb") as stderr:
        job = subprocess.Popen(_job(broker, topic, tmp_path, "--trigger-seconds", "0.5"),
                               stdout=subprocess.DEVNULL, stderr=stderr)
    into_micro_batches(job, tmp_path / "warehouse", rng, before)
    return job


def test_sigkill_at_a_sink_step_sigkill_and_sigterm_mid_stream_then_restart(
    kafka_broker, topic: str, tmp_path: Path, reference: dict
) -> None:
    """Three faults on one warehouse and checkpoint, each resumed from (arm, run, resume, compare): a SIGKILL
    at an exact sink step (the failpoint, in the job's first micro-batches), a SIGKILL mid-stream of the
    restarted job, then a service manager's stop: SIGTERM ends the query, exit 0 (not the signal's -15). An
    `--available-now` run then ends with the tables of an uninterrupted ingest, and no duplicate image.
    The log (3,068 messages, 250 a micro-batch: 13) leaves each restart images still to publish."""
    env = {**os.environ, "KRAFTLAKE_FAILPOINT": "sink.between_history_and_current:3"}
    crashed = subprocess.run(
        _job(kafka_broker, topic, tmp_path, "--available-now"), env=env, capture_output=True, text=True
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]

    rng = random.Random(11)
    killed = _restarted(kafka_broker, topic, tmp_path, rng, tmp_path / "killed.log")
    killed.send_signal(signal.SIGKILL)
    killed.wait()

    stopped = _restarted(kafka_broker, topic, tmp_path, rng, log := tmp_path / "stopped.log")
    stopped.send_signal(signal.SIGTERM)
    assert stopped.wait(timeout=120) == 0, log.read_text()[-2000:]
    assert "StackOverflowError" not in log.read_text()  # stopped between micro-batches

    contents = _finish(kafka_broker, topic, tmp_path)
    assert _without_images(contents) == _without_images(reference)
    assert len(contents["image_offsets"]) == len(set(contents["image_offsets"]))
