"""Catching up a 1M-partition backlog as users run it: every step a `kraftlake` command in a new process.

The backlog is bench_jobs's synthetic bootstrap (100k topics of 10 partitions, RF 3, 6 brokers; 1.1M records
in one 128 MB segment), written long ago, as a cluster's log is when kraftlake starts late or comes back from
an outage. (1) `kraftlake publish DIR` puts it into a fresh metadata topic on the local broker: the path
`publish --follow` and `follow` take for a backlog (one message per batch through the same producer).
(2) `kraftlake materialize --available-now` drains the topic into a fresh warehouse with the job's defaults
(Spark reads the whole backlog as one micro-batch), and (3) again with `--max-offsets-per-trigger 250`, as
an operator bounding micro-batches would (about 20 micro-batches of 250 messages): each micro-batch's image
would rewrite most of the current tables, so while the batches are older than a minute the images wait at
geometric steps (README, "Catching up"). Goals (issue 21, item 2): each drain <= 60 s, the warehouse <= 1 GB
on disk at the end, every file left included. Start to exit of each process, one run each (a drain takes a
JVM start and the whole backlog), on a shared machine: the load average is noted.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from bench import row
from bench.bench_jobs import ControllerLog, controller_log, running_broker
from kraftlake.lake.warehouse import IMAGES

PARTITIONS = 1_000_000
GOAL_DRAIN_S = 60.0
GOAL_BYTES = 1e9
KRAFTLAKE = [sys.executable, "-m", "kraftlake"]
BOUNDED_TRIGGER = 250  # messages a micro-batch, when the operator bounds them


def segment_dir(log: ControllerLog, root: Path) -> Path:
    directory = root / "log" / "__cluster_metadata-0"
    directory.mkdir(parents=True)
    (directory / "00000000000000000000.log").write_bytes(b"".join(log.batches))
    return directory


def timed(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - start, done.stdout


def on_disk(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def drain(label: str, broker: str, topic: str, root: Path, extra: list[str]) -> list[dict[str, Any]]:
    warehouse, checkpoint = root / f"warehouse-{label}", root / f"checkpoint-{label}"
    seconds, _ = timed([*KRAFTLAKE, "materialize", "--bootstrap-servers", broker, "--topic", topic,
                        "--warehouse", str(warehouse), "--checkpoint", str(checkpoint), "--available-now", *extra])
    images = DeltaTable(str(warehouse / IMAGES)).to_pyarrow_table(columns=["offset"]).column("offset").to_pylist()
    size = on_disk(warehouse)
    name = f"`kraftlake materialize --available-now{' ' + ' '.join(extra) if extra else ''}`"
    return [
        row(f"({label}) {name}", seconds, notes=f"start to exit; {len(images)} images, the last at offset "
            f"{max(images):,}"),
        row(f"({label})     warehouse on disk at the end", size / 1e9, "GB"),
        row(f"goal: ({label}) drain <= {GOAL_DRAIN_S:g} s", "met" if seconds <= GOAL_DRAIN_S else "NOT met", "",
            f"{seconds:.1f} s"),
        row(f"goal: ({label}) warehouse <= {GOAL_BYTES / 1e9:g} GB", "met" if size <= GOAL_BYTES else "NOT met", "",
            f"{size / 1e9:.2f} GB"),
    ]


def run() -> list[dict[str, Any]]:
    rows = [row("load average at start", os.getloadavg()[0], "")]
    log = controller_log(PARTITIONS)
    with tempfile.TemporaryDirectory(prefix="bench-catchup-") as scratch:
        root = Path(scratch)
        directory = segment_dir(log, root)
        with running_broker(root) as broker:
            topic = "kraftlake-metadata-backlog"
            seconds, out = timed([*KRAFTLAKE, "publish", str(directory), "--topic", topic,
                                  "--bootstrap-servers", broker.bootstrap_servers])
            published = re.search(r"(\d[\d,]*) (?:batches|messages)", out)
            rows.append(row("(1) `kraftlake publish DIR` into a fresh topic", seconds, notes=(
                f"{len(log.batches):,} batches, {log.next_offset:,} records, {log.size / 1e6:.0f} MB"
                f"{'; ' + published.group(0) if published else ''}")))
            rows += drain("2", broker.bootstrap_servers, topic, root, [])
            rows += drain("3", broker.bootstrap_servers, topic, root,
                          ["--max-offsets-per-trigger", str(BOUNDED_TRIGGER)])
    rows.append(row("load average at the end", os.getloadavg()[0], ""))
    return rows
