"""The `kraftlake` command line: one subcommand module per concern, each with `register(subparsers)`.

What the help says to users (the groups, one example per command) is `kraftlake.cli.help`. A subcommand's
handler returns the process exit code. Expected failures (bad input, bad config, a broker that is down, a
controller that refuses) raise `UserFacingError` here, or the library's own errors listed in
`expected_errors`, and are printed as one line on stderr with exit code 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from kraftlake.cli.errors import UserFacingError
from kraftlake.cli.help import add_examples, group_commands
from kraftlake.settings import SettingsError


def expected_errors() -> tuple[type[Exception], ...]:
    """Errors whose message is the whole story: the library packages raise their own, the CLI maps them here.
    Imported when a command fails, not at start: the controller's package costs every command ~0.3 s."""
    from kraftlake.controller.admin_client import AdminError
    from kraftlake.inputs import InputError
    from kraftlake.metrics.errors import MetricsError

    return UserFacingError, SettingsError, AdminError, InputError, MetricsError


# Each module names one area of the tool, exposes `register(subparsers) -> None` and adds these commands.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "kraftlake.cli.commands.dump": ("dump",),
    "kraftlake.cli.commands.broker": ("broker",),
    "kraftlake.cli.commands.replay": ("replay",),
    "kraftlake.cli.commands.warehouse": ("ingest", "image", "changes", "maintain"),
    "kraftlake.cli.commands.history": ("history",),
    "kraftlake.cli.commands.analytics": ("sql", "summary", "report"),
    "kraftlake.cli.commands.ui": ("ui",),
    "kraftlake.cli.commands.alert": ("alert",),
    "kraftlake.cli.commands.quorum": ("quorum",),
    "kraftlake.cli.commands.materialize": ("materialize",),
    "kraftlake.cli.commands.publish": ("publish",),
    "kraftlake.cli.commands.follow": ("follow",),
    "kraftlake.cli.commands.demo": ("demo",),
    "kraftlake.cli.commands.admin": ("controller", "admin"),
    "kraftlake.cli.commands.simulate": ("simulate",),
}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the one `argv` names: then only its module is imported (the
    controller's, Raft's and the Kafka client's modules cost every command ~0.3 s of start-up)."""
    parser = argparse.ArgumentParser(prog="kraftlake")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    named = argv[0] if argv else None
    modules = [module for module, commands in COMMAND_MODULES.items() if named in commands]
    for module_name in modules or COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    add_examples(parser)
    if not modules:
        group_commands(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except expected_errors() as error:  # evaluated only when the command raised
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
