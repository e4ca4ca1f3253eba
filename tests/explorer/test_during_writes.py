"""The explorer open on a warehouse while it is written: `ingest` publishes images with every maintenance step
of the sink (image checkpoints, compactions, sweeps, log pruning, re-bucketing; the policy of
tests/lake/test_readers_during_writes.py) and `kraftlake maintain` compacts and vacuums with zero retention
in another process. A thread polls the real `kraftlake ui` over loopback at random moments; every answer
must be a whole image: equal to what the reader answers for that offset on the finished warehouse, and the
published range only grows."""

from __future__ import annotations

import json
import random
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from tests.explorer.conftest import KRAFTLAKE, start_ui, stop_ui
from tests.lake.test_readers_during_writes import POLICY

SAMPLE = "rjmfernandes_flink-on-prem/data"
IMAGE_EVERY = 250
API = "/api/v1/clusters/live"


def get(base: str, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"{base}{path}", timeout=60) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as refused:
        return refused.code, json.load(refused)


def poll(base: str, done: threading.Event, answers: list[dict[str, Any]], failures: list[str]) -> None:
    """Random moments within the published range, until the writers are done (and a few after)."""
    rng = random.Random(29)
    last_seen = -1
    extra = 3
    while extra:
        extra -= done.is_set()
        status, known = get(base, API)
        if status != 200:
            failures.append(f"range: {status} {known}")
            continue
        if known["last_offset"] < last_seen:
            failures.append(f"the published range went back: {known['last_offset']} < {last_seen}")
        last_seen = known["last_offset"]
        offset = rng.randint(known["first_offset"], known["last_offset"])
        image = get(base, f"{API}/image?at={offset}")
        topics = get(base, f"{API}/topics?at={offset}&size=500")
        partitions = get(base, f"{API}/image/partitions?at={offset}&size=500&sort=partition_id")
        start = rng.randint(known["first_offset"], offset)
        changes = get(base, f"{API}/changes?from={start}&to={offset}&table=partitions&size=500")
        timeline = get(base, f"{API}/timeline") if len(answers) % 4 == 0 else (200, None)
        for name, (status, body) in {"image": image, "topics": topics, "partitions": partitions,
                                     "changes": changes, "timeline": timeline}.items():
            if status != 200:
                failures.append(f"{name} at {offset}: {status} {body}")
        answers.append({"offset": offset, "start": start, "image": image[1], "topics": topics[1],
                        "partitions": partitions[1], "changes": changes[1]})


def maintain_until(warehouse: Warehouse, done: threading.Event, runs: list[subprocess.CompletedProcess]) -> None:
    while not done.is_set():
        runs.append(subprocess.run([*KRAFTLAKE, "maintain", "--warehouse", warehouse.uri, "--retention-hours", "0"],
                                   capture_output=True, text=True))


def test_the_explorer_shows_whole_images_while_the_warehouse_is_written(samples_dir: Path,
                                                                       tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    done = threading.Event()
    answers: list[dict[str, Any]] = []
    failures: list[str] = []
    maintained: list[subprocess.CompletedProcess] = []
    def write() -> None:
        try:
            ingest(samples_dir / SAMPLE, warehouse, image_every=IMAGE_EVERY, policy=POLICY)
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while not (warehouse.exists() and WarehouseReader(warehouse).last_published() >= 0) and writer.is_alive():
            done.wait(0.05)
        ui = start_ui(warehouse, "--name", "live")
        maintainer = threading.Thread(target=maintain_until, args=(warehouse, done, maintained))
        poller = threading.Thread(target=poll, args=(ui.base, done, answers, failures))
        maintainer.start()
        poller.start()
        writer.join()
        poller.join()
        maintainer.join()
        stop_ui(ui)
    finally:
        done.set()
        writer.join()

    assert failures == []
    assert len(answers) >= 10, len(answers)
    assert maintained and [(r.returncode, r.stderr) for r in maintained if r.returncode] == []
    reader = WarehouseReader(warehouse)
    for answer in answers:
        offset = answer["offset"]
        image = reader.image_at(offset)
        assert answer["image"]["rows"] == {name: table.num_rows for name, table in image.tables.items()}, offset
        assert sorted(t["name"] for t in answer["topics"]["topics"]) == sorted(image.tables["topics"]["name"]
                                                                               .to_pylist())
        partitions = image.tables["partitions"]
        assert answer["partitions"]["total"] == partitions.num_rows
        shown = {(r["topic_id"], r["partition_id"]): (r["isr"], r["leader"]) for r in answer["partitions"]["rows"]}
        if partitions.num_rows <= 500:
            assert shown == {(r["topic_id"], r["partition_id"]): (r["isr"], r["leader"])
                             for r in partitions.to_pylist()}, offset
        changed = reader.changes(answer["start"], offset)["partitions"]
        assert answer["changes"]["total"] == changed.num_rows, offset
