"""JSON text written column by column from Arrow is, byte for byte, what `json.dumps` writes for the same
values: every type a table holds, nulls, escapes, slices, on one line and indented at depth."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from kraftlake.image_schema import json_text
from kraftlake.image_schema.json_text import Layout, buffer_of, canonical_layout, objects_text, row_lines, values_text

TABLE = pa.table({
    "int": pa.array([1, None, -3, 2**40], pa.int64()),
    "small": pa.array([1, 2, None, -128], pa.int8()),
    "ints": pa.array([[1, 2], [], None, [7]], pa.list_(pa.int32())),
    "text": ["plain", 'caf\u00e9 "quoted" \\ \n', None, ""],
    "texts": [["a", "b"], [], None, ["tab\t"]],
    "flag": [True, False, None, True],
    "record": pa.array([{"z": 1, "y": ["p"]}, None, {"z": None, "y": []}, {"z": 2, "y": None}]),
    "records": pa.array([[{"name": "a", "port": 1}], [], [{"name": "b", "port": None}, None], None]),
    "real": [1.5, None, 2.0, -0.25],
    "map": pa.array([[("k", 1)], [], None, [("a", 2), ("b", 3)]], pa.map_(pa.string(), pa.int64())),
})


# Columns of one value and of empty lists are written as constants, not per row: alone, beside columns, and
# in one-row slices (where every column is uniform).
UNIFORM = pa.table({
    "same": pa.array([7, 7, 7], pa.int32()),
    "flag": [False, False, False],
    "empty": pa.array([[], [], []], pa.list_(pa.int32())),
})
SLICES = {"whole": TABLE, "tail": TABLE.slice(1), "middle": TABLE.slice(1, 2), "first row": TABLE.slice(0, 1),
          "last row": TABLE.slice(3), "uniform": UNIFORM,
          "uniform beside columns": UNIFORM.append_column("names", pa.array([["x"]] * 3)).append_column(
              "varies", pa.array([1, 2, 3]))}


@pytest.mark.parametrize("table", SLICES.values(), ids=SLICES.keys())
def test_rows_are_what_json_dumps_writes(table: pa.Table) -> None:
    expected = "".join(json.dumps(row, sort_keys=True) + "\n" for row in table.to_pylist())
    assert buffer_of(row_lines(table)).tobytes().decode() == expected


@pytest.mark.parametrize("table", SLICES.values(), ids=SLICES.keys())
@pytest.mark.parametrize("indent", [None, 2, 4])
def test_objects_at_any_indent_are_what_json_dumps_writes(indent: int | None, table: pa.Table) -> None:
    layout = canonical_layout(indent)
    texts = objects_text({name: table[name] for name in table.column_names}, layout, 0).to_pylist()
    assert len(texts) == table.num_rows
    for row, text in zip(table.to_pylist(), texts, strict=True):
        assert text == json.dumps(row, sort_keys=True, indent=indent,
                                  separators=(layout.item_separator, layout.key_separator))


def test_a_value_at_depth_continues_the_indentation_of_its_parent() -> None:
    layout = Layout(2, ",", ": ")
    text = values_text(TABLE["ints"], layout, 3).to_pylist()[0]
    wrapped = json.dumps({"a": {"b": {"c": [1, 2]}}}, indent=2, separators=(",", ": "))
    assert text in wrapped


def test_no_rows_no_bytes() -> None:
    assert buffer_of(row_lines(TABLE.slice(0, 0))).tobytes() == b""


def test_rows_written_by_slices_are_the_rows_written_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices built on threads, a few ahead of the writer, come out in order."""
    table = pa.concat_tables([TABLE] * 9)
    monkeypatch.setattr(json_text, "SLICE_ROWS", 5)
    chunks = list(json_text.row_line_chunks(table))
    assert len(chunks) == 8
    assert b"".join(chunks) == buffer_of(row_lines(table)).tobytes()
