"""`kraftlake ingest` on the real Kafka samples: the warehouse answers every offset as replay does."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kraftlake.cli.main import main
from kraftlake.image_schema.canonical import canonical_json
from kraftlake.lake.errors import TimeTravelError
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.log_replay import replay_paths

SAMPLE_DIRS = {
    "Niloufar1171_LDI-POC": "Niloufar1171_LDI-POC",
    "rjmfernandes": "rjmfernandes_flink-on-prem/data",
    "Jeong-Rae": "Jeong-Rae_KafkaDemo/kraft-combined-logs",
    "kckoh": "kckoh_xflow/kafka-data",
}


@pytest.fixture(scope="module")
def ingested(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Warehouse]]:
    result = {}
    for name, relative in SAMPLE_DIRS.items():
        warehouse = Warehouse(tmp_path_factory.mktemp(name) / "warehouse")
        ingest(samples_dir / relative, warehouse, image_every=700)
        result[name] = (samples_dir / relative, warehouse)
    return result


def _offsets_to_check(warehouse: Warehouse, seed: int) -> list[int]:
    """Dense where it matters: the bootstrap transaction, both sides of every change, a random spread."""
    images = WarehouseReader(warehouse).images()
    first, last = images[0].offset if images[0].snapshot else 0, images[-1].offset
    change_points = sorted({row["from_offset"] for row in _history_offsets(warehouse)})
    rng = random.Random(seed)
    picked = set(range(first, min(first + 12, last + 1)))
    picked.update(rng.sample(change_points, min(20, len(change_points))))
    picked.update(p - 1 for p in list(picked) if p > first)
    picked.update(rng.sample(range(first, last + 1), min(10, last + 1 - first)))
    picked.update(image.offset for image in images)
    return sorted(picked)


def _history_offsets(warehouse: Warehouse) -> list[dict]:
    from kraftlake.image_schema.tables import TABLES
    from kraftlake.lake.warehouse import history_name

    rows: list[dict] = []
    for name in TABLES:
        rows += warehouse.table(history_name(name)).to_pyarrow_table(columns=["from_offset"]).to_pylist()
    return rows


@pytest.mark.parametrize("sample", list(SAMPLE_DIRS))
def test_every_checked_offset_equals_replay(sample: str, ingested: dict[str, tuple[Path, Warehouse]]) -> None:
    directory, warehouse = ingested[sample]
    offsets = _offsets_to_check(warehouse, seed=len(sample))
    for offset in offsets:
        try:
            replayed = replay_paths([directory], offset).image
        except ReplayError:  # before the first image: the warehouse refuses it too
            with pytest.raises(TimeTravelError, match="before the first published image"):
                WarehouseReader(warehouse).image_at(offset)
            continue
        from_delta = WarehouseReader(warehouse).image_at(offset)
        assert canonical_json(from_delta.to_image()) == canonical_json(replayed), f"{sample} differs at {offset}"
        assert from_delta.asked == offset


def test_bootstrap_transaction_is_atomic_in_the_warehouse(ingested: dict[str, tuple[Path, Warehouse]]) -> None:
    """Niloufar's log: Begin at offset 1, MV at 2, ZkMigrationState at 3, End at 4 (see dump): nothing is
    published before the End, so offsets 0..3 are refused."""
    _, warehouse = ingested["Niloufar1171_LDI-POC"]
    for offset in range(0, 4):
        with pytest.raises(TimeTravelError, match=rf"offset {offset} is before the first published image \(offset 4\)"):
            WarehouseReader(warehouse).image_at(offset)
    levels = {n: WarehouseReader(warehouse).image_at(n).to_image().features.metadata_version for n in (4, 5)}
    assert levels == {4: 19, 5: 19}


def test_provenance_names_the_batch_of_the_offset(ingested: dict[str, tuple[Path, Warehouse]]) -> None:
    directory, warehouse = ingested["rjmfernandes"]
    reader = WarehouseReader(warehouse)
    for offset in (5, 7751, 17026):
        assert reader.image_at(offset).provenance == replay_paths([directory], offset).image.provenance


def test_snapshot_only_history_starts_at_the_snapshot(ingested: dict[str, tuple[Path, Warehouse]]) -> None:
    _, warehouse = ingested["kckoh"]
    assert [image.offset for image in WarehouseReader(warehouse).images()] == [7604]
    with pytest.raises(TimeTravelError, match="offset 7000 is before the first published image"):
        WarehouseReader(warehouse).image_at(7000)


def test_past_the_last_image_is_refused(ingested: dict[str, tuple[Path, Warehouse]]) -> None:
    _, warehouse = ingested["Jeong-Rae"]
    with pytest.raises(TimeTravelError, match=r"offset 3072 is past the end: images answer offsets 4\.\.3071"):
        WarehouseReader(warehouse).image_at(3072)


def test_cli_image_json_equals_cli_replay_json(ingested: dict[str, tuple[Path, Warehouse]]) -> None:
    """Byte for byte, provenance included: both print the one canonical text."""
    directory, warehouse = ingested["rjmfernandes"]
    kraftlake = [sys.executable, "-m", "kraftlake.cli.main"]
    for command in ([*kraftlake, "image", "--warehouse", warehouse.uri, "--at-offset", "3"],
                    [*kraftlake, "replay", str(directory), "--to-offset", "3"]):
        refused = subprocess.run(command, capture_output=True, text=True, check=False)
        assert refused.returncode == 2 and "offset 3 is before the first published image" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    for offset in (5, 7751, 17026):
        image = subprocess.run(
            [*kraftlake, "image", "--warehouse", warehouse.uri, "--at-offset", str(offset), "--json"],
            capture_output=True, check=True,
        ).stdout
        replayed = subprocess.run(
            [*kraftlake, "replay", str(directory), "--to-offset", str(offset), "--json"],
            capture_output=True, check=True,
        ).stdout
        assert image == replayed, offset
    assert json.loads(image)["topics"], "the last offset has topics: the section written from Arrow is compared"


def test_cli_image_table_rows_are_json_lines(ingested: dict[str, tuple[Path, Warehouse]],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`image --table T` writes each row as `json.dumps(row, sort_keys=True)` does, for every table: the first
    as its own process, the others through the same `main` in this one (a process start each costs seconds)."""
    _, warehouse = ingested["rjmfernandes"]
    image = WarehouseReader(warehouse).image_at(17026)
    for index, (name, table) in enumerate(image.tables.items()):
        argv = ["image", "--warehouse", warehouse.uri, "--at-offset", "17026", "--table", name]
        if index == 0:
            printed = subprocess.run([sys.executable, "-m", "kraftlake.cli.main", *argv], capture_output=True,
                                     text=True, check=True).stdout
        else:
            capsys.readouterr()
            assert main(argv) == 0, name
            printed = capsys.readouterr().out
        assert printed == "".join(json.dumps(row, sort_keys=True) + "\n" for row in table.to_pylist()), name


def test_ingest_twice_adds_nothing(ingested: dict[str, tuple[Path, Warehouse]], tmp_path: Path) -> None:
    from tests.lake.warehouse_state import warehouse_contents

    directory, warehouse = ingested["Jeong-Rae"]
    before = warehouse_contents(warehouse)
    result = ingest(directory, warehouse, image_every=700)
    assert result.images_published == 0
    assert warehouse_contents(warehouse) == before
