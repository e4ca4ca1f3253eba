"""The streaming job's writer (`MicroBatchWriter`) among other writers of its warehouse: an `ingest` started
while it runs takes the warehouse over and the job stops at its next micro-batch with one line naming the
warehouse, having published nothing more; a job started again afterwards takes over in turn. The messages are
a real log's batches as `kraftlake publish` puts them in the topic (the first micro-batch starts at Kafka
offset 0, so no Spark read is needed to rebuild the replay state)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraftlake.jobs.materialize import MaterializeConfig, MicroBatchWriter
from kraftlake.lake.errors import WriterFencedError
from kraftlake.lake.ingest import ingest
from kraftlake.lake.topic_replay import TopicMessage
from kraftlake.lake.warehouse import IMAGES, Warehouse
from kraftlake.records.files import read_batches
from kraftlake.records.topic import encode_key

SAMPLE = "Niloufar1171_LDI-POC"


def _messages(directory: Path) -> list[TopicMessage]:
    segment = directory / "__cluster_metadata-0" / "00000000000000000000.log"
    raw = segment.read_bytes()
    return [
        TopicMessage(index, encode_key(batch.base_offset), raw[batch.position : batch.position + batch.size_in_bytes])
        for index, batch in enumerate(read_batches(segment))
    ]


def _image_offsets(warehouse: Warehouse) -> list[int]:
    return sorted(warehouse.table(IMAGES).to_pyarrow_table(columns=["offset"])["offset"].to_pylist())


def test_a_job_is_fenced_by_an_ingest_then_a_restarted_job_takes_over(samples_dir: Path, tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    config = MaterializeConfig("127.0.0.1:9", "metadata", warehouse.uri, tmp_path / "checkpoint",
                               idle_publish_seconds=0.0, coalesce_backlog=False)
    messages = _messages(samples_dir / SAMPLE)
    job = MicroBatchWriter(config, spark=None)
    job.write(messages[:1000])
    ingested = ingest(samples_dir / SAMPLE, warehouse, image_every=2000)
    before = _image_offsets(warehouse)

    with pytest.raises(WriterFencedError):
        job.write(messages[1000:1100])
    assert job.failure is not None and "\n" not in job.failure and job.fenced
    assert warehouse.uri in job.failure and "took it over" in job.failure
    # it says who holds the warehouse (the ingest, this host and process) and not to rerun (that would fence it)
    assert f"directory {samples_dir / SAMPLE}" in job.failure and f"pid {os.getpid()}" in job.failure
    assert "rerunning this one would stop that one" in job.failure and "fix and rerun" not in job.failure
    assert _image_offsets(warehouse) == before, "the fenced job published nothing"

    restarted = MicroBatchWriter(config, spark=None)
    restarted.write(messages)
    offsets = _image_offsets(warehouse)
    assert offsets[: len(before)] == before and len(offsets) == len(set(offsets))
    assert max(offsets) == ingested.last_offset
