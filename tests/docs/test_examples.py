"""`make run` ends healthy, and the docs' examples run. One demo (`kraftlake demo`, in this process) for the
module: its cluster ends with every broker registered and unfenced and every partition led, it prints where to
look, and every shell example of README.md and docs/ marked `<!-- example: runs -->` runs against its
warehouse (the others are marked not run, with why: tests/docs/examples.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftlake.cli.demo import Demo
from kraftlake.cli.main import main
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from tests.docs.examples import documents, examples

pytestmark = pytest.mark.integration

EXAMPLES = [example for path in documents() for example in examples(path)]


@pytest.fixture(scope="module")
def demo(spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    """The demo's folder (run/, warehouse/) and what it printed; Spark's session is the tests' one."""
    repo = tmp_path_factory.mktemp("demo")
    said: list[str] = []
    Demo(repo, say=said.append).run()
    yield repo, said


def test_the_demo_ends_healthy_and_says_where_to_look(demo: tuple[Path, list[str]]) -> None:
    repo, said = demo
    reader = WarehouseReader(Warehouse(repo / "warehouse"))
    tables = reader.image_at(reader.published_range()[1]).tables
    brokers = tables["brokers"].to_pylist()
    assert len(brokers) == 6 and not [b["broker_id"] for b in brokers if b["fenced"]], "every broker unfenced"
    partitions = tables["partitions"].to_pylist()
    leaderless = [(p["topic_name"], p["partition_id"]) for p in partitions if p["leader"] < 0]
    assert not leaderless, f"partitions without a leader at the end: {leaderless[:10]}"
    under_replicated = [(p["topic_name"], p["partition_id"]) for p in partitions if len(p["isr"]) < len(p["replicas"])]
    assert not under_replicated, f"under-replicated at the end: {under_replicated[:10]}"
    text = "\n".join(said)
    assert (repo / "run" / "report.html").is_file() and str(repo / "run" / "report.html") in text
    assert "6 brokers registered, 0 fenced" in text and " 0 without a leader, 0 under-replicated" in text
    assert text.count("  .venv/bin/kraftlake ") == 3, "three commands to try"
    for story in ("aborted it", "joined the quorum", "reassigned orders-0", "eligible leader replicas",
                  "which failed", "mixed workload", "the storm passes"):
        assert story in text


def test_every_example_is_marked_and_the_runnable_ones_run(demo: tuple[Path, list[str]], capsys) -> None:
    unmarked = [example.where for example in EXAMPLES if example.why is None and not example.runs]
    assert not unmarked, f"mark these `<!-- example: runs -->` or `<!-- example: not run (why) -->`: {unmarked}"
    repo, _ = demo
    runnable = [example for example in EXAMPLES if example.runs]
    not_run = [example for example in EXAMPLES if not example.runs]
    previous = Path.cwd()
    os.chdir(repo)
    try:
        for example in runnable:
            for argv in example.commands:
                code = main(list(argv))
                assert code == 0, f"{example.where}: kraftlake {' '.join(argv)}: {capsys.readouterr().err}"
    finally:
        os.chdir(previous)
    counts = (f"docs examples: {len(runnable)} blocks run ({sum(len(e.commands) for e in runnable)} commands), "
              f"{len(not_run)} blocks not run ({', '.join(sorted({e.why or '' for e in not_run}))})")
    with capsys.disabled():
        print(f"\n{counts}")
    assert runnable and not_run
