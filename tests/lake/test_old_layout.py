"""A warehouse written before row versions were stamped with the offset of the published image (history per
record, no publish points in `batches`, no `gaps` table) is refused with one line saying how to rebuild it,
by every reader and by a writer, never read with the old meaning: its history cannot be migrated (which
records shared a batch or a transaction is not stored)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from kraftlake.lake.errors import WarehouseLayoutError
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import BATCHES, BATCHES_SCHEMA, GAPS, Warehouse

SAMPLE = "Jeong-Rae_KafkaDemo/kraft-combined-logs"
OLD_BATCHES = pa.schema([field for field in BATCHES_SCHEMA if field.name not in ("published_offsets", "image_before")])


def as_written_before(warehouse: Warehouse) -> None:
    """The layout of the kraftlake before publish points: `batches` without them, no `gaps` table."""
    rows = warehouse.table(BATCHES).to_pyarrow_table().select(OLD_BATCHES.names).cast(OLD_BATCHES)
    write_deltalake(warehouse.table_uri(BATCHES), rows, mode="overwrite", schema_mode="overwrite")
    shutil.rmtree(warehouse.table_uri(GAPS))


@pytest.fixture
def old(samples_dir: Path, tmp_path: Path) -> Warehouse:
    warehouse = Warehouse(tmp_path / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse, image_every=5000)
    as_written_before(warehouse)
    return warehouse


def test_readers_refuse_it_naming_the_rebuild(old: Warehouse) -> None:
    for read in (lambda r: r.image_at(100), lambda r: r.changes(0, 100), lambda r: r.history("brokers", "1")):
        with pytest.raises(WarehouseLayoutError, match=r"written by an older kraftlake .*: rebuild it \(ingest or "
                                                       r"publish the log again into a new warehouse\)"):
            read(WarehouseReader(old))


def test_the_cli_exits_2_with_one_line_and_a_writer_is_refused(old: Warehouse, samples_dir: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "kraftlake.cli.main", "image", "--warehouse", old.uri,
                           "--at-offset", "100"], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "written by an older kraftlake" in done.stderr and old.uri in done.stderr
    with pytest.raises(WarehouseLayoutError, match="written by an older kraftlake"):
        ingest(samples_dir / SAMPLE, old)
