"""`kraftlake materialize`: run the streaming job (jobs/materialize.py) with settings from
conf/kraftlake.toml, each overridable by a flag (`kraftlake.settings.flags`, which the job's own spark-submit
entry point parses too). `--available-now` drains the topic and stops."""

from __future__ import annotations

import argparse
from typing import Any

from kraftlake.cli.config import resolve_bootstrap
from kraftlake.cli.errors import UserFacingError
from kraftlake.settings import SettingsError, load_kraftlake
from kraftlake.settings.flags import MaterializeConfig, add_materialize_arguments, materialize_config
from kraftlake.stopping import stop_on_signals

DEFAULT_CLUSTER = "default"  # the `cluster` label of one job's series, as one `follow`'s


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("materialize", help="replay the metadata topic into the Delta warehouse")
    add_materialize_arguments(parser)
    parser.add_argument("--metrics-address", metavar="HOST:PORT",
                        help="serve Prometheus metrics (last published offset, commit-to-published latency, "
                             "micro-batch duration, rows written, failures) at http://HOST:PORT/metrics (a port "
                             "alone: on 127.0.0.1; default: off; with --fleet: one `cluster` label per "
                             "cluster)")
    parser.set_defaults(handler=run)


def config_from(args: argparse.Namespace) -> MaterializeConfig:
    """The job's settings; no Kafka named anywhere: the local broker's."""
    settings = load_kraftlake(args.config)
    bootstrap = resolve_bootstrap(args.bootstrap_servers or settings.kafka.bootstrap_servers or None)
    try:
        return materialize_config(args, settings, bootstrap)
    except SettingsError as error:
        raise UserFacingError(str(error)) from None


def run(args: argparse.Namespace) -> int:
    from kraftlake.jobs.materialize import JobLog, MaterializeError, Observers, say
    from kraftlake.jobs.materialize import run as run_job
    from kraftlake.lake.warehouse import Warehouse
    from kraftlake.metrics.endpoint import metrics_served
    from kraftlake.metrics.materialize import MaterializeMetrics

    config = config_from(args)
    stop = stop_on_signals()  # SIGTERM stops the query and exits 0
    metrics = MaterializeMetrics()
    try:
        with metrics_served(args.metrics_address, metrics.collectors()) as endpoint:
            if endpoint is not None:
                say(f"materialize: metrics at {endpoint.url}")
            if config.fleet is not None:
                from kraftlake.jobs.fleet import run_fleet_job

                run_fleet_job(config, stop=stop, observe=None if endpoint is None else metrics.of, say=say)
            else:
                job_log = JobLog(DEFAULT_CLUSTER, say)
                job_log.started(f"{config.topic} on {config.bootstrap_servers}",
                                Warehouse(config.warehouse, dict(config.storage_options)))
                run_job(config, stop=stop,
                        observer=job_log if endpoint is None else Observers(job_log, metrics.of(DEFAULT_CLUSTER)))
                job_log.stopped()
    except MaterializeError as error:
        if error.fenced:  # its line says which writer holds the warehouse: a rerun would stop that one
            raise UserFacingError(str(error)) from None
        raise UserFacingError(f"{error} (nothing past the last good image was published; fix and rerun)") from None
    return 0
