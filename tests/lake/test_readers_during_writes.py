"""Readers during every write: another process asks `kraftlake image`, `changes` and `history` at random
offsets in a loop while the sink commits images, compacts, checkpoints images, re-buckets a growing current
table, sweeps quiet tables and prunes Delta logs, and while `kraftlake maintain` compacts, checkpoints and
vacuums (zero retention) in a third process. Every answer equals the reference replay (images) or the same
query on the finished warehouse (changes, history), and none fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from kraftlake.lake.ingest import ingest
from kraftlake.lake.maintainer import Maintainer
from kraftlake.lake.maintenance import MaintenancePolicy
from kraftlake.lake.warehouse import IMAGE_CHECKPOINTS, Warehouse
from tests.lake.reader_loop import run as cli
from tests.lake.test_ingest import SAMPLE_DIRS

SAMPLE = "rjmfernandes"
KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]
# Every maintenance step of the sink, many times over one sample: an image checkpoint every 10 history
# rows, a compaction at 3 small files, a sweep every 4 images, a log prune every 3 commits keeping 4
# versions, and 2 rows a bucket, so `partitions` is re-bucketed as the cluster grows.
POLICY = MaintenancePolicy(
    checkpoint_min_rows=10, compact_above_files=3, sweep_every_images=4, prune_every_commits=3, keep_log_versions=4,
    rows_per_bucket=2,
)
IMAGE_EVERY = 150


@pytest.fixture
def busy_sink(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the re-bucketings and sweeps the maintainer makes."""
    counts: Counter[str] = Counter()
    rebucket, maintain = Maintainer._rebucket_if_due, Maintainer._maintain

    def rebucketed(self: Maintainer, name: str) -> bool:
        counts["rebucket"] += (done := rebucket(self, name))
        return done

    def maintained(self: Maintainer, tables: list[str], above: int | None = None) -> None:
        counts["sweep"] += above == 0
        maintain(self, tables, above)

    monkeypatch.setattr(Maintainer, "_rebucket_if_due", rebucketed)
    monkeypatch.setattr(Maintainer, "_maintain", maintained)
    return counts


def _maintain_until(warehouse: Warehouse, done: threading.Event, results: list[subprocess.CompletedProcess]) -> None:
    """`kraftlake maintain` with zero retention, again and again, from the writer's first image to its end."""
    while not done.is_set() and not warehouse.exists():
        done.wait(0.05)
    while not done.is_set():
        results.append(subprocess.run(
            [*KRAFTLAKE, "maintain", "--warehouse", warehouse.uri, "--retention-hours", "0"],
            capture_output=True, text=True,
        ))


def test_every_answer_during_writes_and_maintenance_is_exact(
    busy_sink: Counter[str], samples_dir: Path, tmp_path: Path
) -> None:
    directory = samples_dir / SAMPLE_DIRS[SAMPLE]
    warehouse = Warehouse(tmp_path / "warehouse")
    out, stop = tmp_path / "answers.jsonl", tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-m", "tests.lake.reader_loop", warehouse.uri, str(out), str(stop), "11"],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    maintained: list[subprocess.CompletedProcess] = []
    done = threading.Event()
    maintainer = threading.Thread(target=_maintain_until, args=(warehouse, done, maintained))
    maintainer.start()
    try:
        ingest(directory, warehouse, image_every=IMAGE_EVERY, policy=POLICY)
    finally:
        done.set()
        stop.touch()
        reader.wait(60)
        maintainer.join()

    assert reader.returncode == 0
    assert busy_sink["rebucket"] >= 1 and busy_sink["sweep"] >= 1, busy_sink
    assert warehouse.table(IMAGE_CHECKPOINTS).to_pyarrow_table().num_rows >= 2
    assert maintained and [(r.returncode, r.stderr) for r in maintained if r.returncode] == []
    vacuumed = sum(int(line.rsplit(" ", 1)[1]) for run in maintained for line in run.stdout.splitlines())
    assert vacuumed > 0  # maintain really deleted files under the readers

    answers = [json.loads(line) for line in out.read_text().splitlines()]
    failed = [(a["argv"], a["stderr"]) for a in answers if a["code"] != 0]
    assert failed == []
    kinds = Counter(a["argv"][0] for a in answers)
    assert min(kinds[k] for k in ("image", "changes", "history")) >= 3, kinds
    for answer in answers:
        argv = answer["argv"]
        if argv[0] == "image":
            offset = argv[argv.index("--at-offset") + 1]
            code, expected, _ = cli(["replay", str(directory), "--to-offset", offset, "--json"])
        else:
            code, expected, _ = cli(argv)  # the same question, asked of the finished warehouse
        assert code == 0 and _same(answer["stdout"], expected, argv[0]), argv


def _same(answer: str, expected: str, kind: str) -> bool:
    if kind == "image":
        return json.loads(answer) == json.loads(expected)
    return answer == expected

