"""`WarehouseReader.history` on real samples equals what replaying the log shows for that key, batch by batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kraftlake.image_schema.json_text import buffer_of
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.errors import TimeTravelError, UnknownKeyError
from kraftlake.lake.history import Version
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import read_batches
from kraftlake.replay.loader import BatchLoader
from kraftlake.replay.log_replay import history_sources

SAMPLE = "rjmfernandes_flink-on-prem/data"


@pytest.fixture(scope="module")
def warehouse(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    warehouse = Warehouse(tmp_path_factory.mktemp("history") / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse, image_every=5000)
    return warehouse


def replayed_states(directory: Path, table: str, key: tuple[Any, ...]) -> list[tuple[int, dict | None]]:
    """(batch last offset, the key's row after that batch or None) for every batch of the log, in Arrow's
    Python form (lists, not tuples) like the warehouse's."""
    loader = BatchLoader(None)
    states = []
    for source in history_sources(directory):
        assert source.snapshot is None, "the sample is a whole log"
        for batch in read_batches(source.path):
            loader.load_commit(batch, str(source.path))
            rows = dict(TABLES[table].image_rows(loader.image))
            found = rows.get(key)
            states.append((batch.last_offset, None if found is None else TABLES[table].arrow([found]).to_pylist()[0]))
    return states


def folded(versions: list[Version], offset: int) -> dict | None:
    """The row at `offset` rebuilt from the versions' key and `after` columns."""
    row: dict | None = None
    for version in versions:
        if version.offset > offset:
            break
        row = None if version.change == "delete" else {**(row or {}), **version.key, **version.after}
    return row


@pytest.mark.parametrize(("table", "key_text", "key"), [
    ("brokers", "1", (1,)),
    ("partitions", "__consumer_offsets-7", None),
])
def test_history_equals_replay_version_by_version(
    warehouse: Warehouse, samples_dir: Path, table: str, key_text: str, key: tuple | None
) -> None:
    versions = WarehouseReader(warehouse).history(table, key_text)
    assert len(versions) >= 2 and versions[0].change == "insert"
    key = key or tuple(versions[0].key.values())
    expected = replayed_states(samples_dir / SAMPLE, table, key)
    previous = [None, *(state for _, state in expected)]
    changed_at = [offset for (offset, state), before in zip(expected, previous, strict=False) if state != before]
    for offset, state in expected:
        assert folded(versions, offset) == state, f"{table} {key_text} at offset {offset}"
    assert [v.offset for v in versions] == changed_at, "one version per published image that changed the row"
    assert [v.offset for v in versions] == sorted(v.offset for v in versions)
    times = WarehouseReader(warehouse).offset_times([v.offset for v in versions])
    assert all(v.time_ms == times[v.offset] > 0 for v in versions)


def test_only_changed_columns_and_a_window(warehouse: Warehouse) -> None:
    versions = WarehouseReader(warehouse).history("brokers", "1")
    for version in versions[1:]:
        assert version.before.keys() == version.after.keys() and version.before != version.after
    later = WarehouseReader(warehouse).history("brokers", "1", from_offset=versions[0].offset)
    assert later == versions[1:]
    assert later[0].before  # the version before the window still gives `before`


def test_unknown_keys_are_named(warehouse: Warehouse) -> None:
    with pytest.raises(UnknownKeyError, match="no topic named 'nope'"):
        WarehouseReader(warehouse).history("partitions", "nope-0")
    with pytest.raises(UnknownKeyError, match="topic-partition"):
        WarehouseReader(warehouse).history("partitions", "7")
    with pytest.raises(UnknownKeyError, match="key 'one': a broker id is written in the digits 0-9"):
        WarehouseReader(warehouse).history("brokers", "one")
    # a broker id is its column's int32 (beyond it, pyarrow's comparison raised a TypeError); no other digits
    with pytest.raises(UnknownKeyError, match="key '2147483648': a broker id is from -2147483648 to 2147483647"):
        WarehouseReader(warehouse).history("brokers", "2147483648")
    with pytest.raises(UnknownKeyError, match="digits 0-9"):
        WarehouseReader(warehouse).history("partitions", "orders-²")


def test_changes_lines_equal_the_images_either_side(warehouse: Warehouse) -> None:
    """`kraftlake changes`' lines (written from columns) against time travel: each line's `before` and
    `after` are the key's row in the images at offset - 1 and at offset, the changed columns only, and
    the lines are exactly the history rows of the window."""
    changes = WarehouseReader(warehouse).changes(2, WarehouseReader(warehouse).last_published())
    seen, kinds = 0, set()
    for name, table in changes.items():
        if not table.num_rows:
            continue
        key = TABLES[name].key
        text = buffer_of(WarehouseReader(warehouse).change_lines(name, table)).tobytes()
        lines = [json.loads(line) for line in text.splitlines()]
        assert sorted(line["offset"] for line in lines) == sorted(table["from_offset"].to_pylist())
        for line in lines[:: max(1, len(lines) // 15)]:
            seen += 1
            rows = [_row_at(warehouse, name, key, line["key"], line["offset"] - d) for d in (1, 0)]
            old, new = rows
            columns = [c for c in (new or old or {}) if c not in key]
            shown = [c for c in columns if (old or {}).get(c) != (new or {}).get(c)] if old and new else \
                [c for c in columns if (old or new or {}).get(c) is not None or new]
            assert line["change"] == ("insert" if old is None else "delete" if new is None else "update")
            kinds.add(line["change"])
            assert line["before"] == ({c: old[c] for c in shown} if old else {}), line
            assert line["after"] == ({c: new[c] for c in shown} if new else {}), line
    assert seen >= 10 and {"insert", "update"} <= kinds


def _row_at(warehouse: Warehouse, table: str, key: tuple[str, ...], values: dict, offset: int) -> dict | None:
    """The key's row in the image at `offset` (None before the first image: no row yet)."""
    try:
        rows = WarehouseReader(warehouse).image_at(offset).tables[table].to_pylist()
    except TimeTravelError:
        return None
    return next((row for row in rows if all(row[c] == values[c] for c in key)), None)
