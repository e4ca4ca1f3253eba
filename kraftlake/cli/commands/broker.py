"""`kraftlake broker start|stop|status`: the embedded local Kafka broker (one Apache Kafka node) as a
background service."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kraftlake.cli.broker import LocalBroker, default_data_dir, running_broker, stop_broker


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "broker", help="start, stop or check the local Kafka broker (Apache Kafka) used by default"
    )
    actions = parser.add_subparsers(dest="action", required=True)

    start = actions.add_parser("start", help="start it in the background and print its bootstrap servers")
    start.add_argument("--port", type=int, default=None, help="Kafka port on 127.0.0.1 (default: a free one)")
    _add_data_dir(start)
    start.set_defaults(handler=_start)

    stop = actions.add_parser("stop", help="stop it (its data is kept)")
    _add_data_dir(stop)
    stop.set_defaults(handler=_stop)

    status = actions.add_parser("status", help="say where it runs; exit code 1 when it does not")
    _add_data_dir(status)
    status.set_defaults(handler=_status)


def _add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="the broker's data directory, which also identifies it (default: run/broker)",
    )


def _data_dir(args: argparse.Namespace) -> Path:
    return (args.data_dir or default_data_dir()).resolve()


def _start(args: argparse.Namespace) -> int:
    """Print only the address on stdout, so `export KRAFTLAKE_BOOTSTRAP_SERVERS=$(kraftlake broker start)` works."""
    data_dir = _data_dir(args)
    existing = running_broker(data_dir)
    if existing is not None:
        print(f"already running (pid {existing.pid}, data dir {data_dir})", file=sys.stderr)
        print(existing.bootstrap_servers)
        return 0
    broker = LocalBroker(data_dir, args.port, detach=True).start()
    print(f"started (pid {broker.pid}, data dir {data_dir}, log {broker.log_path})", file=sys.stderr)
    print(broker.bootstrap_servers)
    return 0


def _stop(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args)
    stopped = stop_broker(data_dir)
    if stopped is None:
        print(f"not running (data dir {data_dir})")
    else:
        print(f"stopped the broker at {stopped.bootstrap_servers} (pid {stopped.pid})")
    return 0


def _status(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args)
    state = running_broker(data_dir)
    if state is None:
        print(f"not running (data dir {data_dir})")
        return 1
    print(f"running at {state.bootstrap_servers} (pid {state.pid}, data dir {data_dir})")
    return 0
