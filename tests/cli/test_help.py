"""The help speaks to users: `kraftlake --help` says what the tool does and lists every command in one group,
and every command and subcommand's help ends with an example that parses."""

from __future__ import annotations

import shlex

import pytest

from kraftlake.cli.help import EXAMPLES, GROUPS, subcommands
from kraftlake.cli.main import build_parser

COMMANDS = [" ".join(path) for path, _, _ in subcommands(build_parser([]))]


def test_the_top_help_groups_every_command_once() -> None:
    text = build_parser([]).format_help()
    assert "Delta Lake tables" in text.split("Follow and ingest")[0]
    top = [name for name in COMMANDS if " " not in name]
    grouped = [name for _, names in GROUPS for name in names if name in top]
    assert sorted(grouped) == sorted(top), "each top-level command in exactly one of help.GROUPS"
    for title, names in GROUPS:
        listed = text.split(f"{title}:\n", 1)[1].split("\n\n", 1)[0]
        assert [line.split()[0] for line in listed.splitlines()] == [name for name in names if name in top]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_one_example_that_parses(command: str) -> None:
    example = EXAMPLES.get(command)
    assert example, f"no example for `kraftlake {command}` in kraftlake.cli.help.EXAMPLES"
    words = shlex.split(example)
    words = words[words.index("kraftlake"):]  # after an environment variable it may set
    assert words[:2 + command.count(" ")] == ["kraftlake", *command.split()]
    build_parser(words[1:]).parse_args(words[1:])  # exits (SystemExit) if the example does not parse
    shown = {" ".join(path): sub.format_help() for path, sub, _ in subcommands(build_parser(words[1:2]))}
    assert f"example:\n  {example}" in shown[command]


def test_no_example_for_a_command_that_is_gone() -> None:
    assert set(EXAMPLES) <= set(COMMANDS)
