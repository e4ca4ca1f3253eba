"""The docs' reference parts come from the code (docs/hooks/generate.py): every table and column of a
warehouse, every command and subcommand; a page asking for a part that does not exist fails the build."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from kraftlake.cli.help import subcommands
from kraftlake.cli.main import build_parser
from kraftlake.lake.warehouse import all_tables

HOOK = Path(__file__).resolve().parents[2] / "docs" / "hooks" / "generate.py"


@pytest.fixture(scope="module")
def hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate", HOOK)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_table_and_column_is_on_the_tables_page(hook: ModuleType) -> None:
    text = hook.tables()
    for name, schema in all_tables().items():
        if not name.endswith(("_history", "_checkpoints")):
            assert f"### `{name}`" in text
            section = text.split(f"### `{name}`", 1)[1].split("### ", 1)[0]
            for field in schema:
                if field.name != "bucket":
                    assert f"| `{field.name}` | `{field.type}` |" in section, (name, field.name)


def test_every_command_is_on_the_cli_page(hook: ModuleType) -> None:
    text = hook.cli()
    for path, _, _ in subcommands(build_parser([])):
        assert f"### `kraftlake {' '.join(path)}`" in text
    assert "example:\n  kraftlake ingest" in text


def test_a_marker_becomes_its_part_and_an_unknown_one_fails(hook: ModuleType) -> None:
    page = SimpleNamespace(file=SimpleNamespace(src_path="x.md"))
    assert "| section | goal |" in hook.on_page_markdown("<!-- generated: benchmarks -->\n", page, None, None)
    with pytest.raises(PluginError, match="no generated part 'nothing'"):
        hook.on_page_markdown("<!-- generated: nothing -->\n", page, None, None)
