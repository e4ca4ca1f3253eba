"""`kraftlake simulate`: simulated brokers and an operator drive the running controllers (see
brokersim.simulator); prints what was done and refused as JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kraftlake.brokersim.simulator import BrokerSimulator, SimulationConfig
from kraftlake.cli.commands.admin import admin_client
from kraftlake.controller.node import DEFAULT_CONTROLLER_CONFIG, TOKEN_ENV


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("simulate", help="simulated brokers and admin workload against the controllers")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--topics", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=3, help="partitions per topic")
    parser.add_argument("--replication-factor", type=int, default=3)
    parser.add_argument("--racks", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200, help="mixed workload steps after the cluster is built")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=0,
                        help="live brokers also heartbeat in the background at this interval, as real brokers do "
                             "(needed for big clusters, where one step outlasts a session; the run is then not "
                             "exactly repeatable); 0: only between steps")
    parser.add_argument("--config", type=Path, default=DEFAULT_CONTROLLER_CONFIG)
    parser.add_argument("--controllers", help="admin addresses host:port,… (default: [admin.addresses])")
    parser.add_argument("--token", help=f"admin token (default: ${TOKEN_ENV} or [admin] token)")
    parser.set_defaults(handler=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    config = SimulationConfig(
        brokers=args.brokers, topics=args.topics, partitions=args.partitions,
        replication_factor=args.replication_factor, racks=args.racks, steps=args.steps, seed=args.seed,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
    )
    report = BrokerSimulator(admin_client(args, timeout_s=120), config).run()
    print(json.dumps(vars(report), indent=2, sort_keys=True))
    return 0
