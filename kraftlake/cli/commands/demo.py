"""`kraftlake demo` (what `make run` runs): the whole pipeline on the embedded default, then a report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="run broker, quorum, workload and streaming job; print a report")
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="where run/, warehouse/, checkpoints/ go")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kraftlake.cli.demo import Demo

    Demo(args.repo.resolve(), say=lambda line: print(line, flush=True)).run()
    return 0
