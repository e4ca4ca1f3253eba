"""The job runs under the master spark-submit sets: `--master` is honoured, not replaced by a local one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROBE = "from kraftlake.jobs.materialize import local_spark\nprint('master=' + local_spark().sparkContext.master)\n"


def _master_of(command: list[str], tmp_path: Path) -> str:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("KRAFTLAKE_SPARK_MASTER", None)
    done = subprocess.run([*command, str(script)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return next(line for line in done.stdout.splitlines() if line.startswith("master=")).removeprefix("master=")


def test_spark_submit_master_is_honoured(tmp_path: Path) -> None:
    spark_submit = str(Path(sys.executable).parent / "spark-submit")
    assert _master_of([spark_submit, "--master", "local[1]"], tmp_path) == "local[1]"


def test_plain_python_runs_locally(tmp_path: Path) -> None:
    assert _master_of([sys.executable], tmp_path) == "local[2]"
