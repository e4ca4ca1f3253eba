"""The layers point one way (docs/layout.md): the CLI and the web app sit on top and nothing else imports them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOPS = {"kraftlake.cli": "kraftlake/cli", "kraftlake.explorer": "kraftlake/explorer"}
ENTRY = ROOT / "kraftlake" / "__main__.py"  # `python -m kraftlake`: the command line itself


def imported(path: Path) -> set[str]:
    """Every module `path` imports, at its top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("top", sorted(TOPS))
def test_nothing_below_imports_the_top(top: str) -> None:
    folders = [ROOT / "kraftlake", ROOT / "jobs", ROOT / "replay", ROOT / "image_schema"]
    offenders = sorted(
        f"{path.relative_to(ROOT)} imports {name}"
        for folder in folders for path in folder.rglob("*.py")
        if path != ENTRY and not path.resolve().is_relative_to((ROOT / TOPS["kraftlake.cli"]).resolve())
        and not path.resolve().is_relative_to((ROOT / TOPS[top]).resolve())
        for name in imported(path) if name == top or name.startswith(top + ".")
    )
    assert offenders == []
