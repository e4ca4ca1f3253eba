"""Spark's conventions for the streaming job. `spark-submit jobs/materialize.py` without the project's jars
stops with one line naming what is missing and the exact fix (not `TypeError: 'JavaPackage' object is not
callable`); with that fix's `--packages` (Delta Lake and Spark's Kafka source from Maven Central, resolved
through conf/ivysettings.xml) the job materializes a real Kafka log from the topic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import read_batches
from kraftlake.settings.jars import REPO, spark_packages
from kraftlake.settings.spark import IVY_SETTINGS
from tests.fixtures.broker import create_topic, produce
from tests.jobs.metadata_topic import batch_messages

pytestmark = pytest.mark.integration

LOG = "Jeong-Rae_KafkaDemo/kraft-combined-logs/__cluster_metadata-0/00000000000000000000.log"
IVY_CACHE = REPO / "build" / "ivy"  # kept across runs: only the first run downloads the jars


def spark_submit(*args: str) -> subprocess.CompletedProcess[str]:
    """`spark-submit` as a user runs it from the checkout: the venv's script, no project settings."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PYSPARK_GATEWAY")}
    environment |= {"SPARK_HOME": str(Path(pyspark.__file__).parent), "PYSPARK_PYTHON": sys.executable,
                    "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[1]", *args]
    return subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=600)


def job_flags(bootstrap: str, topic: str, tmp_path: Path) -> list[str]:
    return ["jobs/materialize.py", "--bootstrap-servers", bootstrap, "--topic", topic, "--available-now",
            "--warehouse", str(tmp_path / "warehouse"), "--checkpoint", str(tmp_path / "checkpoint")]


def test_without_the_jars_one_line_names_what_is_missing_and_the_fix(tmp_path: Path) -> None:
    done = spark_submit(*job_flags("127.0.0.1:1", "metadata", tmp_path))
    output = done.stdout + done.stderr  # spark-submit passes the Python job's stderr on to its own stdout
    assert done.returncode == 2, output[-3000:]
    assert "Traceback" not in output and "JavaPackage" not in output, output[-3000:]
    line = done.stdout.strip().splitlines()[-1]
    assert line.startswith("materialize: Delta Lake and Spark's Kafka source not on Spark's class path: "), line
    assert f"--packages {','.join(spark_packages())} --conf spark.jars.ivySettings={IVY_SETTINGS}" in line
    assert "python -m kraftlake.settings.spark" in line
    assert not (tmp_path / "warehouse").exists()


@pytest.mark.long  # `make test-long`: Maven resolves and downloads the packages, a minute or more
def test_with_the_packages_the_job_runs(kafka_broker, samples_dir: Path, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    batches = list(read_batches(samples_dir / LOG))
    produce(bootstrap, topic, batch_messages(batches))
    done = spark_submit("--packages", ",".join(spark_packages()), "--conf", f"spark.jars.ivySettings={IVY_SETTINGS}",
                        "--conf", f"spark.jars.ivy={IVY_CACHE}", *job_flags(bootstrap, topic, tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    last = batches[-1].base_offset + batches[-1].last_offset_delta
    assert WarehouseReader(Warehouse(tmp_path / "warehouse")).published_range()[1] == last
