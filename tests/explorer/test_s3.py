"""The explorer over an `s3://` warehouse (a real S3 server, SeaweedFS): the real `kraftlake ui` process,
given the store's options as flags, answers the API as the reader does, and a store it cannot reach
is refused at start in one line naming the warehouse."""

from __future__ import annotations

import json
import subprocess
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from tests.explorer.conftest import KRAFTLAKE
from tests.fixtures.s3 import S3Store

SAMPLE = "Niloufar1171_LDI-POC"


def flags(options: dict[str, str]) -> list[str]:
    return [flag for key, value in options.items() for flag in ("--storage-option", f"{key}={value}")]


def test_the_api_on_an_s3_warehouse(s3_store: S3Store, samples_dir: Path, running_ui: Any) -> None:
    warehouse = Warehouse(s3_store.uri(f"explorer-{uuid.uuid4().hex[:8]}"), s3_store.storage_options())
    ingest(samples_dir / SAMPLE, warehouse, image_every=1000)
    reader = WarehouseReader(warehouse)
    first, last = reader.known().span()  # from the first published image, not the first images row
    ui = running_ui(warehouse, "--name", "s3", *flags(s3_store.storage_options()))

    def get(path: str) -> Any:
        with urllib.request.urlopen(f"{ui.base}/api/v1/clusters/s3{path}", timeout=60) as answer:
            return json.load(answer)

    assert (get("")["first_offset"], get("")["last_offset"]) == (first, last)
    middle = (first + last) // 2
    image = reader.image_at(middle)
    assert get(f"/image?at={middle}")["rows"] == {name: t.num_rows for name, t in image.tables.items()}
    topics = get(f"/topics?at={middle}")["topics"]
    assert sorted(t["name"] for t in topics) == sorted(image.tables["topics"]["name"].to_pylist())
    assert len(get("/timeline")["brokers"]) == len(reader.history_rows("brokers", (), ["broker_id"])
                                                   ["broker_id"].unique())

    closed = {**s3_store.storage_options(), "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "max_retries": "1",
              "retry_timeout": "1s"}
    refused = subprocess.run([*KRAFTLAKE, "ui", "--warehouse", warehouse.uri, *flags(closed)],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert refused.stderr.startswith(f"kraftlake ui: warehouse {warehouse.uri}: ")
