"""`materialize --fleet`'s own lines, on the driver side (no Spark session or Kafka read here): each cluster
says where its writer starts (its warehouse's last published offset, read from a real warehouse ingested from a
real Kafka log), and where it stopped, when it leaves the fleet file and when the job ends. The lines a run
prints between (behind, caught up, a gap) are the one-cluster job's JobLog's, tested with a real job in
test_materialize_metrics."""

from __future__ import annotations

from pathlib import Path

from kraftlake.jobs.fleet import FleetWriter
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.settings.flags import MaterializeConfig
from kraftlake.settings.fleet import cluster_location, load_fleet


def test_each_cluster_says_where_it_starts_and_stops(samples_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text("".join(f'[clusters.{name}]\nbootstrap_controllers = ["h:1"]\ntopic = "t-{name}"\n'
                            for name in ("east", "west")))
    base = MaterializeConfig("kafka:9092", "unused", str(tmp_path / "lake"), tmp_path / "checkpoint")
    east = Warehouse(cluster_location(base.warehouse, "east"))
    ingest(samples_dir / "kckoh_xflow/kafka-data", east)
    held = WarehouseReader(east).last_published()
    lines: list[str] = []
    writer = FleetWriter(None, base, say=lines.append)
    fleet = load_fleet(path)
    for name in fleet.clusters:
        writer.add(fleet, name)
    west = Warehouse(cluster_location(base.warehouse, "west"))
    assert lines == [f"materialize east: t-east on kafka:9092 into {east.uri}, last published offset {held}",
                     f"materialize west: t-west on kafka:9092 into {west.uri}, last published offset none yet"]
    writer.remove("west")  # it left the fleet file
    writer.stopped()  # the job ends
    assert lines[2:] == ["materialize west: stopped at offset none yet", f"materialize east: stopped at offset {held}"]
    assert held > 0
