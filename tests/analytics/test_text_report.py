"""The report `make run` prints: counts through Spark SQL agree with the image, the example travels."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.analytics.report import text_report
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.log_replay import replay_paths
from kraftlake.replay.visibility import time_span

SAMPLE = "Niloufar1171_LDI-POC"


def test_report_counts_and_time_travel(spark, samples_dir: Path, tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse, image_every=2000)
    text = text_report(spark, WarehouseReader(warehouse))
    image = replay_paths([samples_dir / SAMPLE]).image
    lines = {line.split()[0]: line.split() for line in text.splitlines() if line.startswith("  ") and "rows" in line}
    assert int(lines["partitions"][1]) == image.topics.partition_count()
    assert int(lines["topics"][1]) == len(image.topics.by_id)
    assert int(lines["brokers"][1]) == len(image.cluster.brokers)
    # the range it states is the one the warehouse answers and Kafka's log does: refused just before it
    known = WarehouseReader(warehouse).known()
    (first, last), times = known.span(), time_span(known.first_time_ms, known.last_time_ms)
    assert f"history: images answer offsets {first}..{last} ({times})\n" in text and last == 4928
    assert "time unknown" not in times  # the sample's batches carry their append times
    assert replay_paths([samples_dir / SAMPLE], to_offset=first).image.provenance.offset == first
    with pytest.raises(ReplayError, match=f"offset {first - 1} "):
        replay_paths([samples_dir / SAMPLE], to_offset=first - 1)
    assert "image rows: 3 (offsets 1999..4928)" in text  # image_every: images held while catching up
    assert text.count("  at offset ") in (2, 3)
