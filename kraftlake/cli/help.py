"""What `kraftlake --help` and each command's help tell a user: the commands in groups, one example each.

`GROUPS` orders the top-level commands for `kraftlake --help` and the docs' CLI page; `EXAMPLES` holds one
command line per command and subcommand, shown as its help's epilog (tests/cli/test_help.py checks that
every command has one and that it parses).
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Generator, Iterator

SUMMARY = (
    "kraftlake keeps the full history of a Kafka cluster's KRaft metadata (__cluster_metadata: topics, "
    "partitions, ISR and leaders, brokers, configs, ACLs, quotas, ...) as Delta Lake tables, and answers "
    "questions about any metadata offset or time."
)

# (title, commands): every top-level command in exactly one group. A name not registered is skipped.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Follow and ingest a cluster's metadata log", ("follow", "publish", "materialize", "ingest")),
    ("Query the history", ("image", "changes", "history", "sql", "summary", "report", "ui", "replay", "dump")),
    ("Operate the warehouse", ("maintain", "alert")),
    ("The embedded quorum and the demo", ("demo", "broker", "controller", "quorum", "admin", "simulate")),
)

EXAMPLES: dict[str, str] = {
    "follow": "kraftlake follow --bootstrap-controllers ctrl1:9093,ctrl2:9093 --bootstrap-servers kafka1:9092",
    "publish": "kraftlake publish /var/lib/kafka/data/__cluster_metadata-0 --follow --bootstrap-servers kafka1:9092",
    "materialize": "kraftlake materialize --bootstrap-servers kafka1:9092 --warehouse warehouse",
    "ingest": "kraftlake ingest /var/lib/kafka/data/__cluster_metadata-0 --warehouse warehouse",
    "image": "kraftlake image --warehouse warehouse --at-time 2026-11-27T02:14 --table partitions",
    "changes": "kraftlake changes --warehouse warehouse --from 100 --to 200",
    "history": "kraftlake history --warehouse warehouse --table brokers --key 5",
    "sql": "kraftlake sql --warehouse warehouse \"SELECT topic_name, count(*) FROM partitions GROUP BY topic_name\"",
    "summary": "kraftlake summary fencing_episodes --warehouse warehouse",
    "report": "kraftlake report --warehouse warehouse --out report.html",
    "ui": "kraftlake ui --warehouse warehouse --port 8080",
    "replay": "kraftlake replay /var/lib/kafka/data/__cluster_metadata-0 --to-offset 1234 --json",
    "dump": "kraftlake dump /var/lib/kafka/data/__cluster_metadata-0/00000000000000000000.log",
    "maintain": "kraftlake maintain --warehouse warehouse --retention-hours 1",
    "alert": "kraftlake alert --warehouse warehouse --alerts conf/alerts.toml",
    "demo": "kraftlake demo",
    "broker": "kraftlake broker start",
    "broker start": "kraftlake broker start --data-dir run/broker",
    "broker stop": "kraftlake broker stop",
    "broker status": "kraftlake broker status",
    "controller": "kraftlake controller start --node-id 1",
    "controller start": "kraftlake controller start --node-id 1",
    "quorum": "kraftlake quorum describe",
    "quorum start": "kraftlake quorum start --node-id 4",
    "quorum describe": "kraftlake quorum describe --json",
    "quorum append": "kraftlake quorum append --count 10",
    "quorum add-voter": "kraftlake quorum add-voter --node-id 4",
    "quorum remove-voter": "kraftlake quorum remove-voter --node-id 2",
    "quorum simulate": "kraftlake quorum simulate --seeds 1000",
    "admin": "kraftlake admin describe",
    "admin describe": "kraftlake admin describe",
    "admin describe-topic": "kraftlake admin describe-topic orders",
    "admin create-topic": "kraftlake admin create-topic orders --partitions 12 --config retention.ms=86400000",
    "admin delete-topic": "kraftlake admin delete-topic orders",
    "admin create-partitions": "kraftlake admin create-partitions orders 24",
    "admin alter-config": "kraftlake admin alter-config --topic orders --set min.insync.replicas=2",
    "admin elect-leaders": "kraftlake admin elect-leaders --type preferred --partition orders:3",
    "admin reassign": "kraftlake admin reassign orders:3 --replicas 4,5,6",
    "admin list-reassignments": "kraftlake admin list-reassignments",
    "admin update-feature": "kraftlake admin update-feature metadata.version 27",
    "admin create-acl": "kraftlake admin create-acl --resource-type topic --resource-name orders "
                        "--principal User:alice --operation read",
    "admin delete-acls": "kraftlake admin delete-acls --principal User:alice",
    "admin alter-quota": "kraftlake admin alter-quota --user alice --set producer_byte_rate=1048576",
    "admin upsert-scram": "KRAFTLAKE_SCRAM_PASSWORD=secret kraftlake admin upsert-scram alice",
    "admin delete-scram": "kraftlake admin delete-scram alice --mechanism SCRAM-SHA-256",
    "admin create-token": "kraftlake admin create-token --owner User:alice",
    "admin renew-token": "kraftlake admin renew-token --hmac HMAC --principal User:alice",
    "admin expire-token": "kraftlake admin expire-token --hmac HMAC --principal User:alice",
    "admin unregister-broker": "kraftlake admin unregister-broker 5",
    "admin register-broker": "kraftlake admin register-broker 5 --incarnation-id 5XrKd7zBQ2eMj0RJxj7Fkw "
                             "--listener PLAINTEXT=127.0.0.1:9097",
    "admin heartbeat": "kraftlake admin heartbeat 5 --epoch 12 --offset 340",
    "admin alter-partition": "kraftlake admin alter-partition orders:3 --broker 5 --epoch 12 --leader-epoch 1 "
                             "--partition-epoch 2 --isr 5,6",
    "admin allocate-producer-ids": "kraftlake admin allocate-producer-ids 5 --epoch 12",
    "admin call": "kraftlake admin call describe",
    "simulate": "kraftlake simulate --brokers 6 --topics 20 --partitions 10 --seed 1",
}


def subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """Every (sub)command under `parser`, depth first: its path of names, its parser and its one-line help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, helps.get(name)
                yield from subcommands(sub, (*path, name))


class _GroupedFormatter(argparse.RawDescriptionHelpFormatter):
    """The top-level help: the description lists the commands in groups, so argparse's flat list goes."""

    def _iter_indented_subactions(self, action: argparse.Action) -> Generator[argparse.Action, None, None]:
        yield from ()


def add_examples(parser: argparse.ArgumentParser) -> None:
    """Each (sub)command of `parser` gets its example as the first part of its help's epilog."""
    for path, sub, _ in subcommands(parser):
        example = EXAMPLES.get(" ".join(path))
        if example:
            sub.epilog = f"example:\n  {example}" + (f"\n\n{sub.epilog}" if sub.epilog else "")
            sub.formatter_class = argparse.RawDescriptionHelpFormatter


def group_commands(parser: argparse.ArgumentParser) -> None:
    """The top-level help: what the tool does, then the commands registered, in `GROUPS`."""
    helps = {path[0]: text for path, _, text in subcommands(parser) if len(path) == 1}
    width = max(len(name) for name in helps)
    lines = [textwrap.fill(SUMMARY, 100), ""]
    for title, names in GROUPS:
        lines.append(f"{title}:")
        lines.extend(f"  {name:<{width}}  {helps[name] or ''}" for name in names if name in helps)
        lines.append("")
    lines.append("`kraftlake COMMAND --help` shows a command's options and an example.")
    parser.description = "\n".join(lines)
    parser.formatter_class = _GroupedFormatter
