"""One source per warehouse: another cluster's log is refused with one line before anything is written
(by cluster id, and by content where no cluster id tells them apart); the same cluster goes on."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from kraftlake.lake.ingest import ingest
from kraftlake.lake.source import SOURCE
from kraftlake.lake.warehouse import Warehouse, all_tables
from kraftlake.records.files import read_batches
from tests.lake.warehouse_state import warehouse_contents

FIRST = "Niloufar1171_LDI-POC"  # cluster q1w2e3r4t5y6u7i8o9p0, offsets 0..4928
OTHER = "Jeong-Rae_KafkaDemo/kraft-combined-logs"  # cluster hSCzevIQRUa-ojqTd_8C5w, offsets 0..3071
PARTITION = "__cluster_metadata-0"
KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]


def _ingest_cli(directory: Path, warehouse: Warehouse) -> subprocess.CompletedProcess[str]:
    command = [*KRAFTLAKE, "ingest", str(directory), "--warehouse", warehouse.uri, "--image-every", "1000"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def _versions(warehouse: Warehouse) -> dict[str, int]:
    return {name: warehouse.table(name).version() for name in all_tables()}


def test_another_clusters_log_is_refused_before_anything_is_written(samples_dir: Path, tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    ingest(samples_dir / FIRST, warehouse, image_every=1000)
    before = _versions(warehouse)
    bare = tmp_path / "bare"  # the other cluster's log without its meta.properties: no cluster id to compare
    shutil.copytree(samples_dir / OTHER / PARTITION, bare / PARTITION)
    for directory, reason in [(samples_dir / OTHER, "another cluster"), (bare, "is not the warehouse's batch")]:
        result = _ingest_cli(directory, warehouse)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert warehouse.uri in lines[0] and reason in lines[0]
        assert "q1w2e3r4t5y6u7i8o9p0" in lines[0]  # the warehouse's cluster, and the refused source
        assert ("hSCzevIQRUa-ojqTd_8C5w" if directory != bare else str(bare / PARTITION)) in lines[0]
        assert _versions(warehouse) == before, "nothing was written"


def test_the_same_cluster_goes_on_from_a_shorter_copy_and_another_nodes_replica(
    samples_dir: Path, tmp_path: Path
) -> None:
    """A copy taken earlier (a prefix of the log), then the whole log from another node's directory (its own
    meta.properties, the same cluster): the tables equal one run over the whole log."""
    whole = samples_dir / FIRST
    reference = Warehouse(tmp_path / "reference")
    ingest(whole, reference, image_every=1000)

    early = tmp_path / "early" / PARTITION
    early.mkdir(parents=True)
    segment = whole / PARTITION / "00000000000000000000.log"
    cut = [batch for batch in read_batches(segment) if batch.last_offset < 2500][-1]
    (early / segment.name).write_bytes(segment.read_bytes()[: cut.position + cut.size_in_bytes])
    shutil.copy(whole / "meta.properties", early.parent)
    replica = tmp_path / "node-2"
    shutil.copytree(whole, replica)
    properties = replica / "meta.properties"
    properties.write_text(properties.read_text().replace("node.id=1", "node.id=2"))

    warehouse = Warehouse(tmp_path / "warehouse")
    assert ingest(early, warehouse, image_every=1000).last_offset == cut.last_offset
    assert ingest(replica, warehouse, image_every=1000).last_offset == 4928

    ours, theirs = warehouse_contents(warehouse), warehouse_contents(reference)
    for name in [name for name in ours if name != "image_offsets"]:  # images at other offsets
        assert ours[name] == theirs[name], name
    source = warehouse.table(SOURCE).to_pyarrow_table().to_pylist()
    assert [(row["cluster_id"], row["first_offset"]) for row in source] == [("q1w2e3r4t5y6u7i8o9p0", 0)]
