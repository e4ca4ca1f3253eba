"""Filtered reads that prune files by their Delta statistics: the same rows as delta-rs's own filtered read,
only the files that may hold a match opened, the latest version seen by a reader that keeps its handles,
and a table rebuilt under the same URI read afresh."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from kraftlake.lake.handles import OPEN_TABLES
from kraftlake.lake.scan import AnyOf, Where, matching_files, scan
from kraftlake.lake.sink import DeltaSink
from kraftlake.lake.warehouse import BATCHES, BATCHES_SCHEMA, Warehouse


def _batches(offsets: range) -> pa.Table:
    return pa.Table.from_pylist(
        [{"base_offset": o, "last_offset": o + 1, "epoch": o % 3, "append_time_ms": 10 * o, "record_count": 2,
          "control": o % 5 == 0, "size_bytes": 90} for o in offsets],
        schema=BATCHES_SCHEMA,
    )


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    warehouse = Warehouse(tmp_path / "warehouse")
    warehouse.create()
    for first in range(0, 1_000, 100):
        write_deltalake(warehouse.table_uri(BATCHES), _batches(range(first, first + 100)), mode="append")
    return warehouse


def _conjunction(rng: random.Random) -> list[tuple[str, str, Any]]:
    filters: list[tuple[str, str, Any]] = [
        (column, rng.choice(["=", "<", "<=", ">", ">="]), rng.randrange(-5, 1_010))
        for column in rng.sample(["base_offset", "last_offset"], rng.randint(1, 2))]
    filters += [("epoch", "=", rng.randrange(3))] if rng.random() < 0.3 else []
    filters += [("base_offset", "in", rng.sample(range(1_010), rng.randint(0, 5)))] if rng.random() < 0.3 else []
    return filters


def test_scan_returns_what_delta_rs_returns(warehouse: Warehouse) -> None:
    """Conjunctions, and disjunctions of them (`AnyOf`), against delta-rs's own filtered read."""
    rng = random.Random(11)
    for _ in range(60):
        disjunction = [_conjunction(rng) for _ in range(rng.randint(1, 3))]
        expected = warehouse.table(BATCHES).to_pyarrow_table(filters=disjunction).sort_by("base_offset")
        where = AnyOf.of([[Where(*term) for term in conjunction] for conjunction in disjunction])
        if len(disjunction) == 1:
            assert scan(warehouse, BATCHES, where.conjunctions[0]).sort_by("base_offset") == expected.cast(
                BATCHES_SCHEMA), disjunction
        assert scan(warehouse, BATCHES, where).sort_by("base_offset") == expected.cast(BATCHES_SCHEMA), disjunction
    assert scan(warehouse, BATCHES, AnyOf(())).num_rows == 0  # no conjunction: no row


def test_only_files_that_may_match_are_read(warehouse: Warehouse) -> None:
    actions = pa.table(warehouse.table(BATCHES).get_add_actions(flatten=True))
    assert matching_files(actions, [Where("base_offset", "=", 250)]).num_rows == 1
    assert matching_files(actions, [Where("base_offset", ">", 250), Where("base_offset", "<=", 450)]).num_rows == 3
    assert matching_files(actions, [Where("last_offset", ">", 5_000)]).num_rows == 0
    assert matching_files(actions, [Where("no_such_column", "=", 1)]).num_rows == 10  # no statistics: kept


def test_an_unsupported_operator_or_a_partitioned_table_is_refused(warehouse: Warehouse) -> None:
    with pytest.raises(ValueError, match="'!=' on base_offset"):
        scan(warehouse, BATCHES, [Where("base_offset", "!=", 1)])
    with pytest.raises(ValueError, match="partitions is partitioned by"):
        scan(warehouse, "partitions", [])


def test_a_kept_handle_sees_every_later_commit(warehouse: Warehouse) -> None:
    assert scan(warehouse, BATCHES, [Where("base_offset", ">=", 1_000)]).num_rows == 0
    write_deltalake(warehouse.table_uri(BATCHES), _batches(range(1_000, 1_010)), mode="append")
    assert scan(warehouse, BATCHES, [Where("base_offset", ">=", 1_000)]).num_rows == 10


def test_a_warehouse_rebuilt_by_a_sink_of_this_process_is_read_afresh(warehouse: Warehouse) -> None:
    assert scan(warehouse, BATCHES, [Where("base_offset", "=", 5)]).num_rows == 1
    shutil.rmtree(warehouse.uri)
    DeltaSink(warehouse)
    for first in range(0, 1_000, 100):  # as many commits as before: the kept handle's version looks current
        write_deltalake(warehouse.table_uri(BATCHES), _batches(range(first + 5_000, first + 5_100)), mode="append")
    assert scan(warehouse, BATCHES, [Where("base_offset", "=", 5_005)]).num_rows == 1


def test_a_file_gone_under_a_kept_handle_is_read_afresh(warehouse: Warehouse) -> None:
    """A rebuild by another process: the kept handle names files that are gone, and the read starts again."""
    assert scan(warehouse, BATCHES, [Where("base_offset", "=", 5)]).num_rows == 1
    shutil.rmtree(warehouse.uri)
    warehouse.create()
    for first in range(0, 1_000, 100):
        write_deltalake(warehouse.table_uri(BATCHES), _batches(range(first, first + 100)), mode="append")
    assert scan(warehouse, BATCHES, [Where("base_offset", "<", 2_000)]).num_rows == 1_000
    OPEN_TABLES.forget(warehouse)
