"""An Arrow answer printed as Spark prints a DataFrame (`show(n, truncate)`, `Row.asDict`), so `kraftlake sql`'s
output is the same whichever engine answered (the README's tables, scripts reading `--json`)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa

SHOWN = 1000  # rows `kraftlake sql` prints
WIDTH = 60  # a cell's characters before Spark cuts it with "..."


def show(table: pa.Table, rows: int = SHOWN, truncate: int = WIDTH) -> str:
    """Spark's `showString(rows, truncate)`: right-aligned cells, NULL, `[a, b]`, `{k -> v}`, `{a, b}`."""
    header = [_cut(name, truncate) for name in table.schema.names]
    body = [[_cut(_text(value, table.schema.field(i).type), truncate) for i, value in enumerate(row.values())]
            for row in table.slice(0, rows).to_pylist(maps_as_pydicts="lossy")]
    widths = [max(3, *(len(line[i]) for line in [header, *body])) for i in range(len(header))]
    rule = "+" + "+".join("-" * width for width in widths) + "+"
    lines = [rule, _line(header, widths), rule, *(_line(line, widths) for line in body), rule]
    more = f"only showing top {rows} {'row' if rows == 1 else 'rows'}\n" if table.num_rows > rows else ""
    return "\n".join(lines) + "\n" + more


def json_lines(table: pa.Table) -> Iterator[str]:
    """One JSON object per row, keys sorted, as `kraftlake sql --json` prints Spark's rows."""
    for row in table.to_pylist(maps_as_pydicts="lossy"):
        yield json.dumps(row, default=json_value, sort_keys=True)


def json_value(value: Any) -> Any:
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _line(cells: list[str], widths: list[int]) -> str:
    return "|" + "|".join(cell.rjust(width) for cell, width in zip(cells, widths, strict=True)) + "|"


def _cut(text: str, truncate: int) -> str:
    if truncate <= 0 or len(text) <= truncate:
        return text
    return text[:truncate] if truncate < 4 else text[:truncate - 3] + "..."


def _text(value: Any, kind: pa.DataType) -> str:
    """A value as Spark's show writes it (Spark 4's `ToPrettyString`)."""
    if value is None:
        return "NULL"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return "[" + ", ".join(_text(item, kind.value_type) for item in value) + "]"
    if pa.types.is_map(kind):
        return "{" + ", ".join(f"{_text(k, kind.key_type)} -> {_text(v, kind.item_type)}"
                               for k, v in value.items()) + "}"
    if pa.types.is_struct(kind):
        return "{" + ", ".join(_text(value[field.name], field.type) for field in kind) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{value.microsecond:06d}".rstrip("0") if value.microsecond else "")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return "[" + " ".join(f"{byte:02X}" for byte in value) + "]"
    return str(value)


def _java_double(value: float) -> str:
    """Java's `Double.toString`: `1.0`, `0.659`, `1.0E-4`, `1.23456789E8`, `NaN`, `Infinity`."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()  # the shortest digits, as Java's
    assert isinstance(exponent, int)
    rest = "".join(map(str, digits[1:])) or "0"
    return f"{'-' if sign else ''}{digits[0]}.{rest}E{exponent + len(digits) - 1}"
