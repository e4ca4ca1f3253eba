"""The fleet job when its catalog is down: one line naming the metastore's JDBC URL and why (never its password),
exit 2, before any micro-batch (nothing written, nothing half-registered): fixed, the job is simply run again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kraftlake.cli.broker import LocalBroker
from kraftlake.cli.kafka_node import free_ports
from tests.harness.followers import REPO

pytestmark = pytest.mark.integration
SAMPLE = "Jeong-Rae_KafkaDemo/kraft-combined-logs"


def kraftlake(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftlake.cli.main", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_a_metastore_that_is_down_stops_the_job_in_one_line(
    kafka_broker: LocalBroker, samples_dir: Path, tmp_path: Path
) -> None:
    topic = f"kraftlake-metadata-down{tmp_path.name[-6:].replace('-', '').lower()}"
    sample = samples_dir / SAMPLE
    published = kraftlake("publish", str(sample), "--topic", topic, "--bootstrap-servers",
                          kafka_broker.bootstrap_servers)
    assert published.returncode == 0, published.stderr
    port = free_ports(1)[0]  # nothing listens there
    password = tmp_path / "password"
    password.write_text("pw-never-shown-42\n")
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'warehouse_root = "{tmp_path / "lake"}"\ncheckpoint = "{tmp_path / "checkpoint"}"\n'
                     f'[clusters.down]\nmetadata_dir = "{sample}"\ntopic = "{topic}"\n'
                     f'[catalog]\njdbc_url = "jdbc:postgresql://127.0.0.1:{port}/metastore"\n'
                     f'password_file = "{password}"\n')
    done = kraftlake("materialize", "--fleet", str(fleet), "--bootstrap-servers", kafka_broker.bootstrap_servers,
                     "--available-now")
    lines = [line for line in done.stderr.splitlines() if line.startswith(("materialize", "kraftlake"))]
    assert done.returncode == 2, done.stderr[-3000:]
    assert lines[-1].startswith(f"kraftlake materialize: catalog jdbc:postgresql://127.0.0.1:{port}/metastore: "
                                f"cannot connect to 127.0.0.1:{port}: Connection refused"), lines
    assert not (tmp_path / "lake").exists(), "checked before any micro-batch: nothing written"
    assert "pw-never-shown-42" not in done.stderr + done.stdout
