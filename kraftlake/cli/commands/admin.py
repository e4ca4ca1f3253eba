"""`kraftlake controller start` runs a controller node; `kraftlake admin <operation> …` asks the active
controller to do something and prints the committed result as JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from kraftlake.cli.config import resolve_bootstrap
from kraftlake.cli.errors import UserFacingError
from kraftlake.controller.admin_client import AdminClient
from kraftlake.controller.node import DEFAULT_CONTROLLER_CONFIG, TOKEN_ENV, admin_token, run_controller_node
from kraftlake.controller.versions import SUPPORTED_FEATURES
from kraftlake.raft.config import DEFAULT_CONFIG as DEFAULT_QUORUM_CONFIG
from kraftlake.settings import load_controller_file


def register(subparsers: Any) -> None:
    node = subparsers.add_parser("controller", help="run a controller node (quorum voter + controller + publisher)")
    node_commands = node.add_subparsers(dest="controller_command", required=True)
    start = node_commands.add_parser("start", help="run voter N with the controller, admin API and publisher")
    start.add_argument("--node-id", type=int, required=True)
    start.add_argument("--quorum-config", type=Path, default=DEFAULT_QUORUM_CONFIG)
    start.add_argument("--config", type=Path, default=DEFAULT_CONTROLLER_CONFIG)
    start.add_argument("--bootstrap-servers", help="Kafka for the publisher (default: [publisher] or local broker)")
    start.add_argument("--no-publisher", action="store_true", help="do not copy the log into Kafka")
    start.set_defaults(handler=_start)

    admin = subparsers.add_parser("admin", help="administer the metadata through the active controller")
    admin.add_argument("--config", type=Path, default=DEFAULT_CONTROLLER_CONFIG)
    admin.add_argument("--controllers", help="admin addresses host:port,… (default: [admin.addresses])")
    admin.add_argument("--token", help=f"admin token (default: ${TOKEN_ENV} or [admin] token)")
    admin.add_argument("--timeout", type=float, default=60.0, help="seconds to find a controller and commit")
    ops = admin.add_subparsers(dest="admin_command", required=True)

    describe = ops.add_parser("describe", help="controller, brokers, topics, counts")
    describe.set_defaults(request=lambda a: ("GET", "describe"))
    describe_topic = ops.add_parser("describe-topic", help="one topic's partitions")
    describe_topic.add_argument("name")
    describe_topic.set_defaults(request=lambda a: ("GET", f"topics/{a.name}"))

    create = ops.add_parser("create-topic", help="create a topic (replicas placed across racks and brokers)")
    create.add_argument("name")
    create.add_argument("--partitions", type=int, default=-1)
    create.add_argument("--replication-factor", type=int, default=-1)
    create.add_argument("--config", dest="configs", action="append", default=[], metavar="KEY=VALUE")
    create.set_defaults(request=lambda a: ("create-topics", {"topics": [{
        "name": a.name, "partitions": a.partitions, "replication_factor": a.replication_factor,
        "configs": _pairs(a.configs),
    }]}))

    delete = ops.add_parser("delete-topic", help="delete topics")
    delete.add_argument("names", nargs="+")
    delete.set_defaults(request=lambda a: ("delete-topics", {"names": a.names}))

    partitions = ops.add_parser("create-partitions", help="grow a topic to COUNT partitions")
    partitions.add_argument("topic")
    partitions.add_argument("count", type=int)
    partitions.set_defaults(request=lambda a: ("create-partitions", {"topic": a.topic, "count": a.count}))

    configs = ops.add_parser("alter-config", help="incremental config change of a topic, a broker or the cluster")
    target = configs.add_mutually_exclusive_group(required=True)
    target.add_argument("--topic")
    target.add_argument("--broker", type=int)
    target.add_argument("--cluster", action="store_true", help="the cluster-wide broker default")
    configs.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    configs.add_argument("--delete", action="append", default=[], metavar="KEY")
    configs.add_argument("--append", action="append", default=[], metavar="KEY=ITEMS")
    configs.add_argument("--subtract", action="append", default=[], metavar="KEY=ITEMS")
    configs.set_defaults(request=_alter_config)

    elect = ops.add_parser("elect-leaders", help="preferred or unclean leader election")
    elect.add_argument("--type", choices=("preferred", "unclean"), default="preferred")
    elect.add_argument("--partition", action="append", default=[], metavar="TOPIC:PARTITION",
                       help="repeatable; none = every partition that needs it")
    elect.set_defaults(request=lambda a: ("elect-leaders", {
        "type": a.type, "partitions": [_topic_partition(p) for p in a.partition] or None,
    }))

    reassign = ops.add_parser("reassign", help="move a partition to new replicas (or --cancel its reassignment)")
    reassign.add_argument("partition", metavar="TOPIC:PARTITION")
    moves = reassign.add_mutually_exclusive_group(required=True)
    moves.add_argument("--replicas", help="target broker ids, comma-separated, the preferred leader first")
    moves.add_argument("--cancel", action="store_true", help="revert to the replicas before the reassignment")
    reassign.set_defaults(request=lambda a: ("alter-reassignments", {"reassignments": [{
        "topic": _topic_partition(a.partition)[0], "partition": _topic_partition(a.partition)[1],
        "replicas": None if a.cancel else [int(b) for b in a.replicas.split(",")],
    }]}))
    reassignments = ops.add_parser("list-reassignments", help="ongoing reassignments (replicas, adding, removing)")
    reassignments.add_argument("--partition", action="append", default=[], metavar="TOPIC:PARTITION",
                               help="repeatable; none = every ongoing reassignment")
    reassignments.set_defaults(request=lambda a: ("list-reassignments", {
        "partitions": [_topic_partition(p) for p in a.partition] or None,
    }))

    feature = ops.add_parser("update-feature", help="finalize a feature level (metadata.version, group.version, …)")
    feature.add_argument("name")
    feature.add_argument("level", type=int)
    feature.add_argument("--upgrade-type", choices=("upgrade", "safe_downgrade", "unsafe_downgrade"),
                         default="upgrade")
    feature.set_defaults(request=lambda a: ("update-features", {
        "updates": {a.name: {"level": a.level, "upgrade_type": a.upgrade_type}},
    }))

    acl = ops.add_parser("create-acl", help="add an ACL")
    _acl_arguments(acl, required=True)
    acl.set_defaults(request=lambda a: ("create-acls", {"acls": [_acl(a)]}))
    acls = ops.add_parser("delete-acls", help="remove every ACL matching the given fields")
    _acl_arguments(acls, required=False)
    acls.set_defaults(request=lambda a: ("delete-acls", {"filters": [_acl(a)]}))

    quota = ops.add_parser("alter-quota", help="set or remove client quotas of one entity")
    quota.add_argument("--user", nargs="?", const="", help="user name (no value: the default user)")
    quota.add_argument("--client-id", nargs="?", const="", help="client id (no value: the default client)")
    quota.add_argument("--ip", nargs="?", const="")
    quota.add_argument("--set", action="append", default=[], metavar="QUOTA=VALUE")
    quota.add_argument("--remove", action="append", default=[], metavar="QUOTA")
    quota.set_defaults(request=_alter_quota)

    scram = ops.add_parser("upsert-scram", help="set a user's SCRAM password (read from $KRAFTLAKE_SCRAM_PASSWORD "
                                                "or stdin, never from the command line)")
    scram.add_argument("user")
    scram.add_argument("--mechanism", default="SCRAM-SHA-512", choices=("SCRAM-SHA-256", "SCRAM-SHA-512"))
    scram.add_argument("--iterations", type=int, default=0)
    scram.set_defaults(request=lambda a: ("alter-scram", {"upsertions": [{
        "user": a.user, "mechanism": a.mechanism, "password": _password(), "iterations": a.iterations,
    }]}))
    unscram = ops.add_parser("delete-scram", help="delete a user's SCRAM credential")
    unscram.add_argument("user")
    unscram.add_argument("--mechanism", default="SCRAM-SHA-512", choices=("SCRAM-SHA-256", "SCRAM-SHA-512"))
    unscram.set_defaults(request=lambda a: ("alter-scram", {"deletions": [{"user": a.user, "mechanism": a.mechanism}]}))

    token = ops.add_parser("create-token", help="create a delegation token (prints its HMAC once)")
    token.add_argument("--owner", required=True, help="principal, e.g. User:alice")
    token.add_argument("--renewer", action="append", default=[])
    token.add_argument("--max-lifetime-ms", type=int, default=-1)
    token.set_defaults(request=lambda a: ("create-token", {
        "owner": a.owner, "renewers": a.renewer, "max_lifetime_ms": a.max_lifetime_ms,
    }))
    for name, help_text in (("renew-token", "push a token's expiry back"), ("expire-token", "expire a token")):
        command = ops.add_parser(name, help=help_text)
        command.add_argument("--hmac", required=True)
        command.add_argument("--principal", required=True)
        command.add_argument("--period-ms", type=int, default=-1)
        command.set_defaults(request=lambda a, op=name: (op, {
            "hmac": a.hmac, "principal": a.principal, "period_ms": a.period_ms,
        }))

    unregister = ops.add_parser("unregister-broker", help="remove a broker's registration")
    unregister.add_argument("broker_id", type=int)
    unregister.set_defaults(request=lambda a: ("unregister-broker", {"broker_id": a.broker_id}))
    _broker_side(ops)

    call = ops.add_parser("call", help="any operation with a raw JSON body")
    call.add_argument("operation")
    call.add_argument("body", nargs="?", default="{}", help="JSON object")
    call.set_defaults(request=lambda a: (a.operation, _json_object(a.body)))
    for parser in ops.choices.values():
        parser.set_defaults(handler=_admin)


def _start(args: argparse.Namespace) -> int:
    settings = load_controller_file(args.config)
    bootstrap = None
    if not args.no_publisher:
        bootstrap = resolve_bootstrap(args.bootstrap_servers or settings.publisher.bootstrap_servers or None)
    return run_controller_node(args.quorum_config, args.config, args.node_id, bootstrap)


def admin_client(args: argparse.Namespace, timeout_s: float) -> AdminClient:
    """The client for `--controllers`/`--token`, else the [admin] addresses and token of `--config`."""
    if args.controllers:
        addresses = [a.strip() for a in args.controllers.split(",") if a.strip()]
        token = args.token or os.environ.get(TOKEN_ENV)
    else:
        settings = load_controller_file(args.config)
        addresses = [settings.admin.addresses[k] for k in sorted(settings.admin.addresses)]
        token = args.token or admin_token(settings)
    return AdminClient(addresses, token, timeout_s=timeout_s)


def _admin(args: argparse.Namespace) -> int:
    client = admin_client(args, args.timeout)
    operation, body = args.request(args)
    if operation == "GET":
        result = client.describe() if body == "describe" else client.describe_topic(body.removeprefix("topics/"))
    else:
        result = client.call(operation, body)
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


def _broker_side(ops: Any) -> None:
    """What a broker sends (BrokerRegistration, BrokerHeartbeat, AlterPartition, AllocateProducerIds): for
    trying things out by hand or scripting a broker; each prints the controller's answer."""
    register = ops.add_parser("register-broker", help="register a broker (prints its broker epoch)")
    register.add_argument("broker_id", type=int)
    register.add_argument("--incarnation-id", required=True, help="a Kafka uuid, new for every start")
    register.add_argument("--listener", action="append", required=True, metavar="NAME=HOST:PORT")
    register.add_argument("--rack")
    register.add_argument("--feature", action="append", default=[], metavar="NAME=MIN-MAX",
                          help="supported feature range (default: every level this controller supports)")
    register.add_argument("--log-dir", action="append", default=[], metavar="UUID")
    register.add_argument("--cluster-id")
    register.set_defaults(request=lambda a: ("register-broker", {
        "broker_id": a.broker_id, "incarnation_id": a.incarnation_id, "rack": a.rack, "log_dirs": a.log_dir,
        "listeners": [_listener(text) for text in a.listener], "cluster_id": a.cluster_id,
        "features": _features(a.feature),
    }))

    heartbeat = ops.add_parser("heartbeat", help="a broker heartbeat (unfences a caught-up broker)")
    heartbeat.add_argument("broker_id", type=int)
    heartbeat.add_argument("--epoch", type=int, required=True, help="the broker epoch of its registration")
    heartbeat.add_argument("--offset", type=int, default=-1, help="the metadata offset the broker has applied")
    heartbeat.add_argument("--want-fence", action="store_true")
    heartbeat.add_argument("--want-shutdown", action="store_true", help="controlled shutdown")
    heartbeat.set_defaults(request=lambda a: ("heartbeat", {
        "broker_id": a.broker_id, "broker_epoch": a.epoch, "metadata_offset": a.offset,
        "want_fence": a.want_fence, "want_shutdown": a.want_shutdown,
    }))

    alter = ops.add_parser("alter-partition", help="a partition leader's ISR change")
    alter.add_argument("partition", metavar="TOPIC:PARTITION")
    alter.add_argument("--broker", type=int, required=True, help="the partition leader")
    alter.add_argument("--epoch", type=int, required=True, help="the leader's broker epoch")
    alter.add_argument("--leader-epoch", type=int, required=True)
    alter.add_argument("--partition-epoch", type=int, required=True)
    alter.add_argument("--isr", required=True, metavar="ID,ID,…")
    alter.set_defaults(request=lambda a: ("alter-partition", {
        "broker_id": a.broker, "broker_epoch": a.epoch, "changes": [{
            "topic": _topic_partition(a.partition)[0], "partition": _topic_partition(a.partition)[1],
            "leader_epoch": a.leader_epoch, "partition_epoch": a.partition_epoch, "isr": _ids(a.isr),
        }],
    }))

    producer_ids = ops.add_parser("allocate-producer-ids", help="a block of producer ids for a broker")
    producer_ids.add_argument("broker_id", type=int)
    producer_ids.add_argument("--epoch", type=int, required=True, help="the broker epoch of its registration")
    producer_ids.set_defaults(request=lambda a: ("allocate-producer-ids", {
        "broker_id": a.broker_id, "broker_epoch": a.epoch,
    }))


def _listener(text: str) -> dict[str, Any]:
    name, sep, address = text.partition("=")
    host, colon, port = address.rpartition(":")
    if not sep or not name or not colon or not host or not port.isdigit():
        raise UserFacingError(f"expected NAME=HOST:PORT, got {text!r}")
    return {"name": name, "host": host, "port": int(port)}


def _features(items: list[str]) -> dict[str, list[int]]:
    if not items:
        return {name: list(levels) for name, levels in SUPPORTED_FEATURES.items()}
    features = {}
    for name, levels in _pairs(items).items():
        low, sep, high = levels.partition("-")
        if not sep or not low.isdigit() or not high.isdigit():
            raise UserFacingError(f"expected NAME=MIN-MAX, got {name}={levels}")
        features[name] = [int(low), int(high)]
    return features


def _ids(text: str) -> list[int]:
    try:
        return [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise UserFacingError(f"expected broker ids separated by commas, got {text!r}") from None


def _pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserFacingError(f"expected KEY=VALUE, got {item!r}")
        pairs[key] = value
    return pairs


def _topic_partition(text: str) -> list[Any]:
    topic, sep, partition = text.rpartition(":")
    if not sep or not partition.isdigit():
        raise UserFacingError(f"expected TOPIC:PARTITION, got {text!r}")
    return [topic, int(partition)]


def _json_object(text: str) -> dict[str, Any]:
    try:
        body = json.loads(text)
    except ValueError as error:
        raise UserFacingError(f"the body is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise UserFacingError("the body must be a JSON object")
    return body


def _alter_config(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    if args.topic is not None:
        resource_type, name = "topic", args.topic
    else:
        resource_type, name = "broker", "" if args.cluster else str(args.broker)
    changes = [{"op": "set", "name": k, "value": v} for k, v in _pairs(args.set).items()]
    changes += [{"op": "delete", "name": k} for k in args.delete]
    changes += [{"op": "append", "name": k, "value": v} for k, v in _pairs(args.append).items()]
    changes += [{"op": "subtract", "name": k, "value": v} for k, v in _pairs(args.subtract).items()]
    if not changes:
        raise UserFacingError("nothing to change: give --set, --delete, --append or --subtract")
    return "alter-configs", {"resource_type": resource_type, "resource_name": name, "changes": changes}


def _acl_arguments(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument("--resource-type", required=required, help="topic, group, cluster, transactional_id, …")
    parser.add_argument("--resource-name", required=required)
    parser.add_argument("--principal", required=required, help="e.g. User:alice")
    parser.add_argument("--operation", required=required, help="read, write, describe, all, …")
    parser.add_argument("--permission", default="allow" if required else None, choices=("allow", "deny"))
    parser.add_argument("--pattern-type", default="literal" if required else None, choices=("literal", "prefixed"))
    parser.add_argument("--host", default="*" if required else None)


def _acl(args: argparse.Namespace) -> dict[str, Any]:
    fields = ("resource_type", "resource_name", "principal", "operation", "permission", "pattern_type", "host")
    return {field: getattr(args, field) for field in fields if getattr(args, field) is not None}


def _alter_quota(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    entity = {kind: (value or None) for kind, value in (("user", args.user), ("client-id", args.client_id),
                                                         ("ip", args.ip)) if value is not None}
    changes: dict[str, float | None] = {}
    for key, value in _pairs(args.set).items():
        try:
            changes[key] = float(value)
        except ValueError:
            raise UserFacingError(f"quota {key} must be a number, not {value!r}") from None
    changes.update(dict.fromkeys(args.remove))
    return "alter-client-quotas", {"entity": entity, "changes": changes}


def _password() -> str:
    password = os.environ.get("KRAFTLAKE_SCRAM_PASSWORD")
    if password is None:
        password = sys.stdin.readline().rstrip("\n")
    return password
