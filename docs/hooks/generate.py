"""MkDocs hook: the reference parts of the docs, generated from the code at build time.

A page asks for a part with a marker line, `<!-- generated: NAME -->`, replaced by `PARTS[NAME]()`:
`tables` (every Delta table and its columns, from `image_schema` and the warehouse layout), `cli` (every
command's help, from the argument parsers) and `benchmarks` (BENCHMARKS.md). An unknown name fails the build.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

REPO = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- generated: (?P<name>[a-z]+) -->$", re.MULTILINE)
HELP_COLUMNS = "100"  # argparse wraps help to $COLUMNS: a fixed width, whatever terminal builds the docs


def tables() -> str:
    """Each sub-image table (key and columns, from `image_schema`), then the tables the warehouse adds."""
    from kraftlake.image_schema.tables import SUB_IMAGE_TABLES
    from kraftlake.lake.warehouse import (
        BUCKET,
        HISTORY_COLUMNS,
        IMAGE_CHECKPOINT_COLUMN,
        all_tables,
        history_name,
        image_checkpoint_table,
    )

    lines: list[str] = []
    derived = set()
    for sub_image in SUB_IMAGE_TABLES:
        for spec in sub_image.tables:
            derived |= {spec.name, history_name(spec.name), image_checkpoint_table(spec.name)}
            keys = ", ".join(f"`{column}`" for column in spec.key)
            lines += [f"### `{spec.name}`", "", f"Sub-image `{spec.sub_image}`; key {keys}.", "",
                      *_columns(spec.schema), ""]
    lines += ["### Columns every sub-image table's companions add", "",
              f"- `<table>` (current rows): `{BUCKET.name}` ({BUCKET.type}), the Delta partition column",
              *(f"- `<table>_history`: `{f.name}` ({f.type})" for f in HISTORY_COLUMNS),
              f"- `<table>_checkpoints`: `{IMAGE_CHECKPOINT_COLUMN.name}` ({IMAGE_CHECKPOINT_COLUMN.type})", ""]
    for name, schema in all_tables().items():
        if name not in derived:
            lines += [f"### `{name}`", "", *_columns(schema), ""]
    return "\n".join(lines)


def _columns(schema: Any) -> list[str]:
    rows = ["| column | type | nullable |", "|---|---|---|"]
    return rows + [f"| `{field.name}` | `{field.type}` | {'yes' if field.nullable else 'no'} |" for field in schema]


def cli() -> str:
    """`kraftlake --help`, then every command's and subcommand's help, in the groups of `kraftlake --help`."""
    from kraftlake.cli.help import GROUPS, subcommands
    from kraftlake.cli.main import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        parser = build_parser([])
        helps = {" ".join(path): sub.format_help() for path, sub, _ in subcommands(parser)}
        lines = ["```text", parser.format_help().rstrip(), "```", ""]
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    for title, names in GROUPS:
        lines += [f"## {title}", ""]
        for command, text in helps.items():
            if command.split()[0] in names:
                lines += [f"### `kraftlake {command}`", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(lines)


def benchmarks() -> str:
    """BENCHMARKS.md under the page's own title: its headings one level down."""
    text = (REPO / "BENCHMARKS.md").read_text()
    body = text.split("\n", 1)[1] if text.startswith("# ") else text
    return re.sub(r"^(#+) ", r"\1# ", body, flags=re.MULTILINE)


PARTS: dict[str, Callable[[], str]] = {"tables": tables, "cli": cli, "benchmarks": benchmarks}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def part(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in PARTS:
            raise PluginError(f"{page.file.src_path}: no generated part {name!r} (known: {', '.join(PARTS)})")
        return PARTS[name]()

    return MARKER.sub(part, markdown)
