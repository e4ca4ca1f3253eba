"""The shell examples of the docs: every fenced block in README.md and docs/**/*.md with a command line that
runs kraftlake is marked, on the line before it, `<!-- example: runs -->` (tests/docs/test_examples.py runs
it against the demo's warehouse) or `<!-- example: not run (why) -->` (a remote cluster, a real cluster's
disk, an object store)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```[^\n]*\n(?P<body>.*?)^```", re.DOTALL | re.MULTILINE)
COMMAND = re.compile(r"^(\$ )?(\.venv/bin/)?kraftlake ", re.MULTILINE)
MARK = re.compile(r"<!-- example: (?P<verdict>runs|not run \((?P<why>[^)]+)\)) -->\s*$")


@dataclass(frozen=True)
class Example:
    where: str  # file:line of the fence
    commands: tuple[tuple[str, ...], ...]  # each command line's arguments after `kraftlake`
    runs: bool
    why: str | None  # None: not marked at all


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def examples(path: Path) -> list[Example]:
    text = path.read_text()
    found = []
    for fence in FENCE.finditer(text):
        body = fence["body"]
        if not COMMAND.search(body):
            continue
        before = text[:fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        where = f"{path.relative_to(REPO)}:{text[:fence.start()].count(chr(10)) + 1}"
        found.append(Example(where, tuple(_commands(body)), bool(mark and mark["verdict"] == "runs"),
                             (mark["why"] or "") if mark else None))
    return found


def _commands(body: str) -> list[tuple[str, ...]]:
    """Each kraftlake command line of a block (continuation lines joined, `$ ` and `.venv/bin/` dropped,
    comments and a trailing `&` left out), as its arguments after `kraftlake`; a line that is no shell (a
    diagram's) is skipped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    commands = []
    for line in joined.splitlines():
        if COMMAND.match(line):
            try:
                words = [word for word in shlex.split(line, comments=True) if word != "&"]
            except ValueError:
                continue
            start = next(i for i, word in enumerate(words) if word.rsplit("/", 1)[-1] == "kraftlake")
            commands.append(tuple(words[start + 1:]))
    return commands
