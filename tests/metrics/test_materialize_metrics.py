"""A real `kraftlake materialize` (Spark's Kafka source, a local Spark) over a topic holding a real Kafka
cluster's metadata log (`kraftlake publish`, one of ../shared/kafka-samples), scraped by a real Prometheus: its
last published offset and the row versions it wrote equal the warehouse's, through Prometheus' HTTP API; its
own lines say where it starts, that it is behind (the sample is old), and where it stopped."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from kraftlake.cli.broker import LocalBroker
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.scan import Where
from kraftlake.lake.warehouse import IMAGES, Warehouse
from tests.fixtures.broker import create_topic
from tests.fixtures.prometheus import Prometheus

KRAFTLAKE = [sys.executable, "-m", "kraftlake"]
SAMPLE = "rjmfernandes_flink-on-prem/data"
METRICS_LINE = re.compile(r"materialize: metrics at http://(\S+)/metrics")
START_S = 600.0  # a local Spark and its Kafka source on a loaded 2-core machine


def announced(process: subprocess.Popen[bytes], log: Path) -> str:
    """The metrics address the job logs (Spark's own lines may come first)."""
    deadline = time.monotonic() + START_S
    while not (found := METRICS_LINE.search(log.read_text(errors="replace"))):
        assert process.poll() is None, f"materialize exited: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no metrics line: {log.read_text()[-3000:]}"
        time.sleep(0.2)
    return found.group(1)


def test_prometheus_reads_the_jobs_published_offset_and_rows(kafka_broker: LocalBroker, prometheus: Prometheus,
                                                             samples_dir: Path, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    done = subprocess.run([*KRAFTLAKE, "publish", str(samples_dir / SAMPLE), "--bootstrap-servers", bootstrap,
                           "--topic", topic], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    warehouse, log = Warehouse(tmp_path / "warehouse"), tmp_path / "materialize.log"
    with log.open("wb") as output:
        job = subprocess.Popen([*KRAFTLAKE, "materialize", "--bootstrap-servers", bootstrap, "--topic", topic,
                                "--warehouse", warehouse.uri, "--checkpoint", str(tmp_path / "checkpoint"),
                                "--trigger-seconds", "1", "--idle-publish-seconds", "0", "--metrics-address", "0"],
                               stdout=output, stderr=subprocess.STDOUT)
    try:
        prometheus.scrape("kraftlake-materialize", [announced(job, log)])
        job_label = '{job="kraftlake-materialize",cluster="default"}'
        reader = WarehouseReader(warehouse)

        def published() -> tuple[int, int]:
            """The warehouse's last image and the history rows written through it."""
            last = reader.last_published() if warehouse.exists() else -1
            rows = reader.scan(IMAGES, [Where("offset", "=", last)], ["history_rows"]).to_pylist() if last >= 0 else []
            return last, rows[0]["history_rows"] if rows else 0

        prometheus.wait_for(f"kraftlake_materialize_last_published_offset{job_label}",
                            lambda s: s.get("default", -1) >= 0 and s["default"] == published()[0], START_S)
        last, rows = published()
        assert last > 0 and rows > 0
        # a scrape may land between the two updates of one image: the next one has both
        prometheus.wait_for(f"kraftlake_materialize_rows_written_total{job_label}", lambda s: s == {"default": rows})
        assert prometheus.query(f"kraftlake_materialize_failures_total{job_label}") == {"default": 0}
        assert prometheus.query(f"kraftlake_materialize_micro_batch_duration_seconds_count{job_label}")["default"] >= 1
        assert prometheus.query(f"kraftlake_materialize_publish_latency_seconds_count{job_label}")["default"] >= 1
    finally:
        prometheus.scrape("kraftlake-materialize", [])
        job.send_signal(signal.SIGTERM)
        assert job.wait(120) == 0, log.read_text()[-3000:]
    lines = [line for line in log.read_text().splitlines() if line.startswith("materialize default: ")]
    assert lines[0] == f"materialize default: {topic} on {bootstrap} into {warehouse.uri}, last published offset " \
                       "none yet"
    assert re.fullmatch(r"materialize default: behind: offset \d+ published \d+ s after its commit", lines[1]), \
        lines  # the sample's batches were appended years ago
    assert lines[-1] == f"materialize default: stopped at offset {reader.last_published()}"


def test_a_fleets_metrics_address_in_use_is_one_line_before_spark_starts(tmp_path: Path) -> None:
    """--fleet serves the job's metrics too (it was refused): the endpoint opens first, so a taken address stops
    the job in one line naming it, before any Spark session or Kafka read."""
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'warehouse_root = "{tmp_path / "lake"}"\n[clusters.east]\nmetadata_dir = "/nowhere"\n')
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([*KRAFTLAKE, "materialize", "--fleet", str(fleet), "--bootstrap-servers", "127.0.0.1:9",
                               "--metrics-address", str(port)], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        f"kraftlake materialize: --metrics-address 127.0.0.1:{port}: Address already in use"]
    assert not (tmp_path / "lake").exists()
