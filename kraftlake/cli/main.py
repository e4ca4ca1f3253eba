"""The `kraftlake` command: one subcommand module per concern, each with `register(subparsers)`.

A subcommand's handler returns the process exit code. Expected failures (bad input, bad config, a broker
that is down, a controller that refuses) raise `UserFacingError` here, or the library's own errors listed in
`EXPECTED_ERRORS`, and are printed as one line on stderr with exit code 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from kraftlake.cli.errors import UserFacingError
from kraftlake.controller.admin_client import AdminError
from kraftlake.settings import SettingsError

# Errors whose message is the whole story: the library packages raise their own, the CLI maps them here.
EXPECTED_ERRORS: tuple[type[Exception], ...] = (UserFacingError, SettingsError, AdminError)

# Each module names one area of the tool and exposes `register(subparsers) -> None`.
COMMAND_MODULES: tuple[str, ...] = (
    "kraftlake.cli.commands.dump",
    "kraftlake.cli.commands.broker",
    "kraftlake.cli.commands.replay",
    "kraftlake.cli.commands.warehouse",
    "kraftlake.cli.commands.history",
    "kraftlake.cli.commands.analytics",
    "kraftlake.cli.commands.quorum",
    "kraftlake.cli.commands.materialize",
    "kraftlake.cli.commands.publish",
    "kraftlake.cli.commands.follow",
    "kraftlake.cli.commands.demo",
    "kraftlake.cli.commands.admin",
    "kraftlake.cli.commands.simulate",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kraftlake", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except EXPECTED_ERRORS as error:
        print(f"kraftlake {args.command}: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


def entry() -> None:
    """Console-script entry: exits without interpreter teardown once output is flushed, because delta-rs's
    native runtime can abort the process while Python finalizes (seen as SIGABRT after a clean run)."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
