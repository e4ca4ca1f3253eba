"""`kraftlake quorum start|describe|append|add-voter|remove-voter|simulate`: run a KRaft-style voter or observer,
inspect the quorum like `kafka-metadata-quorum describe`, write test load, change the voter set at runtime
(KIP-853, kraft_version = 1), and run the deterministic simulation."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from kraftlake.cli.errors import UserFacingError
from kraftlake.raft.config import DEFAULT_CONFIG, load_config
from kraftlake.raft.core import BugFlags
from kraftlake.raft.server import AppendSession, QuorumUnavailable, describe_quorum, print_describe, run_node
from kraftlake.raft.simulation import Simulation

BUG_NAMES = tuple(BugFlags.__dataclass_fields__)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("quorum", help="run and inspect the Raft quorum that commits the metadata log")
    commands = parser.add_subparsers(dest="quorum_command", required=True)

    start = commands.add_parser(
        "start", help="run one voter or observer in the foreground (SIGTERM resigns gracefully)"
    )
    start.add_argument("--node-id", type=int, required=True)
    start.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    start.set_defaults(handler=_start)

    describe = commands.add_parser(
        "describe", help="leader, epoch, high watermark, every voter's and observer's end offset and lag"
    )
    describe.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    describe.add_argument("--json", action="store_true", help="print the leader's view as one JSON object")
    describe.set_defaults(handler=_describe)

    append = commands.add_parser("append", help="append NoOpRecord batches through the leader and wait for commit")
    append.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    append.add_argument("--count", type=int, default=1, help="batches to append, one after the other")
    append.add_argument("--records", type=int, default=1, help="NoOpRecords per batch")
    append.set_defaults(handler=_append)

    for name, verb in (("add-voter", "add an observer (caught up) to"), ("remove-voter", "remove a voter from")):
        change = commands.add_parser(name, help=f"{verb} the voter set; waits until the new set commits it")
        change.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
        change.add_argument("--node-id", type=int, required=True)
        change.add_argument("--timeout", type=float, default=30.0, help="seconds to keep retrying")
        change.set_defaults(handler=_change_voters, add=name == "add-voter")

    simulate = commands.add_parser("simulate", help="run seeded fault-injection scenarios and check the invariants")
    simulate.add_argument("--seeds", type=int, default=100)
    simulate.add_argument("--start-seed", type=int, default=0)
    simulate.add_argument(
        "--bug", choices=BUG_NAMES, action="append", default=[],
        help="run a deliberately broken variant (to see the invariants catch it)",
    )
    simulate.set_defaults(handler=_simulate)


def _start(args: argparse.Namespace) -> int:
    return run_node(load_config(args.config), args.node_id)


def _describe(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    try:
        view = asyncio.run(describe_quorum(config))
    except QuorumUnavailable as error:
        raise UserFacingError(str(error)) from None
    if args.json:
        print(json.dumps(view))
    else:
        print_describe(view)
    return 0


def _append(args: argparse.Namespace) -> int:
    config = load_config(args.config)

    async def run() -> int:
        session = AppendSession(config)
        committed = 0
        attempts = 0
        try:
            while committed < args.count:
                response = await session.append(args.records)
                if "offset" in response:
                    committed += 1
                    print(response["offset"], flush=True)
                    continue
                attempts += 1
                if attempts > 50:
                    raise UserFacingError(f"append kept failing: {response}")
                await asyncio.sleep(0.1)
        finally:
            session.close()
        return 0

    return asyncio.run(run())


# refusals that waiting cannot cure (Kafka's error codes)
FINAL_VOTER_ERRORS = ("DUPLICATE_VOTER", "VOTER_NOT_FOUND", "UNSUPPORTED_VERSION", "INVALID_REQUEST")


def _change_voters(args: argparse.Namespace) -> int:
    config = load_config(args.config)

    async def run() -> dict[str, Any]:
        session = AppendSession(config)
        deadline = asyncio.get_running_loop().time() + args.timeout
        try:
            while True:
                response = await session.change_voters(args.add, args.node_id)
                if "offset" in response:
                    return response
                if response.get("error") in FINAL_VOTER_ERRORS or asyncio.get_running_loop().time() > deadline:
                    raise UserFacingError(f"voter change refused: {response.get('message', response)}")
                await asyncio.sleep(0.2)  # not caught up yet, a change pending, or no leader: try again
        finally:
            session.close()

    response = asyncio.run(run())
    print(f"voters {response['voters']} committed at offset {response['offset']} (epoch {response['epoch']})")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    bugs = BugFlags(**{name: True for name in args.bug})
    violations = 0
    first_failure: int | None = None
    for seed in range(args.start_seed, args.start_seed + args.seeds):
        result = Simulation(seed, bugs=bugs).run()
        if result.violations:
            violations += 1
            if first_failure is None:
                first_failure = seed
                print(f"seed {seed} failed: {result.violations[0]}", flush=True)
    if first_failure is not None:
        traced = Simulation(first_failure, bugs=bugs, trace=True).run()
        print(f"trace of seed {first_failure} (last 200 events):")
        for line in traced.trace[-200:]:
            print(line)
    print(f"{args.seeds} scenarios, {violations} violations")
    sys.stdout.flush()
    return 1 if violations else 0
