"""Scrubbing secrets from a warehouse written before configs were redacted by Kafka's rule.

Rows made today never hold a secret (`image_schema.configs`). A warehouse written by an older kraftlake, whose
name rule missed configs Kafka types `PASSWORD` (`ssl.truststore.certificates`) or does not know, may: `scrub`
rewrites each such value to "[redacted]" in the configs tables (current, history, checkpoints), then deletes
the files and the `_delta_log` entries that held the old values, so no Delta version brings them back (Delta's
file statistics in the log hold a value's first characters). That a secret changed, and when, stays.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kraftlake.image_schema.configs import config_resource
from kraftlake.lake.errors import lost_race
from kraftlake.lake.warehouse import Warehouse, history_name, image_checkpoint_table, writer_properties
from kraftlake.records.config_secrecy import is_secret_config
from kraftlake.replay.canonical import REDACTED

CONFIGS = "configs"
CONFIG_TABLES = (CONFIGS, history_name(CONFIGS), image_checkpoint_table(CONFIGS))


@dataclass(frozen=True)
class ScrubReport:
    """What `scrub` removed from one table: how many rows held a secret, of which configs (type, name)."""

    table: str
    rows: int
    configs: tuple[tuple[str, str], ...]


def scrub(warehouse: Warehouse) -> list[ScrubReport]:
    """Redact every secret value the configs tables still hold; a report per table that held one."""
    return [report for name in CONFIG_TABLES if (report := _scrub_table(warehouse, name)) is not None]


def _scrub_table(warehouse: Warehouse, name: str) -> ScrubReport | None:
    table = warehouse.table(name)
    # cast: delta-rs reads a string column as `string` or `string_view` by file, and no kernel compares the two
    read = table.to_pyarrow_dataset().to_table(columns=["resource_type", "name", "value"])
    values = pa.table({column: pc.cast(read[column], pa.string()) for column in read.column_names})
    shown = values.filter(pc.and_(pc.is_valid(values["value"]), pc.not_equal(values["value"], REDACTED)))
    secrets = tuple(sorted(_secret_configs(shown.select(["resource_type", "name"]))))
    if not secrets:
        return None
    predicate = " OR ".join(f'("resource_type" = {_literal(kind)} AND "name" = {_literal(config)})'
                            for kind, config in secrets)
    try:
        metrics = table.update(new_values={"value": REDACTED}, predicate=f'"value" IS NOT NULL AND ({predicate})',
                               writer_properties=writer_properties())
    except Exception as error:  # a sink committed first: nothing was written; the next run scrubs this table
        if not lost_race(error):
            raise
        return None
    try:
        _forget_old_versions(warehouse, name)
    except Exception as error:  # a sink's commit in between: maintenance's own vacuum and log pruning finish it
        if not lost_race(error):
            raise
    return ScrubReport(name, int(metrics["num_updated_rows"]), secrets)


def _secret_configs(values: pa.Table) -> Iterator[tuple[str, str]]:
    pairs = values.group_by(["resource_type", "name"]).aggregate([]).to_pylist()
    for pair in pairs:
        if is_secret_config(config_resource(pair["resource_type"], "").resource_type, pair["name"]):
            yield pair["resource_type"], pair["name"]


def _literal(text: str) -> str:
    """A SQL string literal of `text` (delta-rs parses predicates and updates as DataFusion SQL)."""
    return "'" + text.replace("'", "''") + "'"


def _forget_old_versions(warehouse: Warehouse, name: str) -> None:
    """Delete what held the old values: the rewritten files (vacuumed at once) and every log entry before
    a checkpoint of the scrubbed version."""
    from kraftlake.lake.maintenance import prune_log

    table = warehouse.table(name)
    table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    table.create_checkpoint()
    prune_log(warehouse, name, keep_versions=0)
