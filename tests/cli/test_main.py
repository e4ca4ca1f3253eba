"""The command line parser: a command line imports only the module of the command it names, and that module
adds exactly the commands `COMMAND_MODULES` lists for it."""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys

import pytest

from kraftlake.cli.main import COMMAND_MODULES, build_parser


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    chosen = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return set(chosen.choices)


@pytest.mark.parametrize("module", COMMAND_MODULES)
def test_each_module_adds_the_commands_listed_for_it(module: str) -> None:
    parser = argparse.ArgumentParser()
    importlib.import_module(module).register(parser.add_subparsers())
    assert _commands(parser) == set(COMMAND_MODULES[module])
    for command in COMMAND_MODULES[module]:
        assert _commands(build_parser([command])) == set(COMMAND_MODULES[module])
    assert _commands(build_parser([])) == {name for names in COMMAND_MODULES.values() for name in names}


def test_a_warehouse_read_starts_light_and_on_arrows_jemalloc_pool() -> None:
    """In a new interpreter (this one has imported everything already): no controller, Raft or Kafka client
    module, and Arrow's default pool (what its C++ readers allocate from) is jemalloc."""
    probe = ("import sys; from kraftlake.cli.main import build_parser; "
             "build_parser(['image']).parse_args(['image', '--warehouse', 'w', '--at-offset', '1']); "
             "print(sorted(m for m in ('kraftlake.controller', 'kraftlake.raft', 'confluent_kafka', 'pandas') "
             "if m in sys.modules)); import pyarrow; print(pyarrow.default_memory_pool().backend_name)")
    environment = {name: value for name, value in os.environ.items() if name != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=environment)
    assert done.stdout.split() == ["[]", "jemalloc"]
