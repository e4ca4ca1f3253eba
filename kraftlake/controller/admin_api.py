"""The admin interface: JSON over HTTP, served by every controller node on loopback by default.

`POST /v1/<operation>` with a JSON object runs one controller operation and answers 200 with
`{"result": ...}` once its records are committed, or an error status with
`{"error": {"code": KAFKA_ERROR_NAME, "message": ..., ["leader_id", "leader_address"]}}`. A standby answers
421 NOT_CONTROLLER naming the active controller's admin address, which the client follows. `GET /v1/describe`
and `GET /v1/topics/<name>` read the committed image. With a token configured, every request must carry
`Authorization: Bearer <token>` (compared in constant time; the token is never logged).
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kraftlake.controller.cluster import BrokerRegistrationRequest, HeartbeatReply, Listener
from kraftlake.controller.config_defs import RESOURCE_TYPES
from kraftlake.controller.configs import ConfigChange, ConfigOp
from kraftlake.controller.controller import QuorumController
from kraftlake.controller.directories import DirectoryAssignment
from kraftlake.controller.errors import ControllerError, InvalidRequestError, UnknownTopicError
from kraftlake.controller.features import UpgradeType
from kraftlake.controller.partition_change import Election
from kraftlake.controller.reassignment import OngoingReassignment
from kraftlake.controller.registration import ControllerRegistrationRequest
from kraftlake.controller.replication import IsrChange, IsrChangeOutcome, NewTopic, TopicOutcome
from kraftlake.controller.security import AclBinding, AclFilter, ScramUpsertion, TokenInfo
from kraftlake.replay.canonical import partition_json

log = logging.getLogger(__name__)
REQUEST_TIMEOUT_S = 120.0
MAX_BODY_BYTES = 64 * 1024 * 1024

Handler = Callable[[QuorumController, dict[str, Any]], Future[Any]]


def _int(body: dict[str, Any], name: str, default: int | None = None) -> int:
    value = body.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidRequestError(f"{name!r} must be an integer")
    return value


def _list(body: dict[str, Any], name: str) -> list[Any]:
    value = body.get(name, [])
    if not isinstance(value, list):
        raise InvalidRequestError(f"{name!r} must be a list")
    return value


def _new_topic(raw: dict[str, Any]) -> NewTopic:
    assignments = raw.get("assignments")
    return NewTopic(
        name=str(raw.get("name", "")),
        partitions=_int(raw, "partitions", -1),
        replication_factor=_int(raw, "replication_factor", -1),
        assignments=None if assignments is None else {int(k): list(v) for k, v in assignments.items()},
        configs={str(k): str(v) for k, v in raw.get("configs", {}).items()},
    )


def _registration(body: dict[str, Any]) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=_int(body, "broker_id"),
        incarnation_id=str(body.get("incarnation_id", "")),
        listeners=[Listener(str(x["name"]), str(x["host"]), int(x["port"]), int(x.get("security_protocol", 0)))
                   for x in _list(body, "listeners")],
        features={str(k): (int(v[0]), int(v[1])) for k, v in body.get("features", {}).items()},
        rack=body.get("rack"),
        log_dirs=tuple(body.get("log_dirs", ())),
        cluster_id=body.get("cluster_id"),
        previous_broker_epoch=_int(body, "previous_broker_epoch", -1),
    )


def _resource_type(body: dict[str, Any]) -> int:
    name = str(body.get("resource_type", ""))
    if name not in RESOURCE_TYPES:
        raise InvalidRequestError(f"resource_type must be one of {', '.join(RESOURCE_TYPES)}")
    return RESOURCE_TYPES[name]


def _config_changes(body: dict[str, Any]) -> list[ConfigChange]:
    try:
        return [
            ConfigChange(ConfigOp(c.get("op", "set")), str(c["name"]), c.get("value")) for c in _list(body, "changes")
        ]
    except (ValueError, KeyError) as error:
        raise InvalidRequestError(f"bad config change: {error}") from None


def _feature_updates(body: dict[str, Any]) -> dict[str, tuple[int, UpgradeType]]:
    try:
        return {
            name: (int(update["level"]), UpgradeType[str(update.get("upgrade_type", "upgrade")).upper()])
            for name, update in body.get("updates", {}).items()
        }
    except (KeyError, ValueError) as error:
        raise InvalidRequestError(f"bad feature update: {error}") from None


def _election(body: dict[str, Any]) -> Election:
    try:
        return Election(str(body.get("type", "preferred")))
    except ValueError:
        raise InvalidRequestError("type must be preferred or unclean") from None


OPERATIONS: dict[str, Handler] = {
    "create-topics": lambda c, b: c.create_topics([_new_topic(t) for t in _list(b, "topics")]),
    "delete-topics": lambda c, b: c.delete_topics([str(n) for n in _list(b, "names")]),
    "create-partitions": lambda c, b: c.create_partitions(str(b.get("topic", "")), _int(b, "count"),
                                                          b.get("assignments")),
    "register-broker": lambda c, b: c.register_broker(_registration(b)),
    "register-controller": lambda c, b: c.register_controller(ControllerRegistrationRequest.from_json(b)),
    "unregister-broker": lambda c, b: c.unregister_broker(_int(b, "broker_id")),
    "heartbeat": lambda c, b: c.broker_heartbeat(
        _int(b, "broker_id"), _int(b, "broker_epoch"), _int(b, "metadata_offset", -1),
        want_fence=bool(b.get("want_fence", False)), want_shutdown=bool(b.get("want_shutdown", False)),
        offline_log_dirs=[str(d) for d in _list(b, "offline_log_dirs")],
    ),
    "assign-replicas-to-dirs": lambda c, b: c.assign_replicas_to_dirs(_int(b, "broker_id"), _int(b, "broker_epoch"), [
        DirectoryAssignment(str(x["directory"]), str(x["topic_id"]), int(x["partition"]))
        for x in _list(b, "assignments")
    ]),
    "alter-partition": lambda c, b: c.alter_partition(_int(b, "broker_id"), _int(b, "broker_epoch"), [
        IsrChange(str(x["topic"]), int(x["partition"]), int(x["leader_epoch"]), int(x["partition_epoch"]),
                  tuple(int(i) for i in x["isr"]), int(x.get("leader_recovery_state", 0)))
        for x in _list(b, "changes")
    ]),
    "elect-leaders": lambda c, b: c.elect_leaders(
        _election(b), None if b.get("partitions") is None else [(str(t), int(p)) for t, p in b["partitions"]]
    ),
    "alter-reassignments": lambda c, b: c.alter_partition_reassignments({
        (str(x["topic"]), int(x["partition"])): None if x.get("replicas") is None else [int(r) for r in x["replicas"]]
        for x in _list(b, "reassignments")
    }),
    "list-reassignments": lambda c, b: c.list_partition_reassignments(
        None if b.get("partitions") is None else [(str(t), int(p)) for t, p in b["partitions"]]
    ),
    "alter-configs": lambda c, b: c.incremental_alter_configs(
        _resource_type(b), str(b.get("resource_name", "")), _config_changes(b)
    ),
    "update-features": lambda c, b: c.update_features(_feature_updates(b)),
    "allocate-producer-ids": lambda c, b: c.allocate_producer_ids(_int(b, "broker_id"), _int(b, "broker_epoch")),
    "create-acls": lambda c, b: c.create_acls([AclBinding(**a) for a in _list(b, "acls")]),
    "delete-acls": lambda c, b: c.delete_acls([AclFilter(**f) for f in _list(b, "filters")]),
    "alter-client-quotas": lambda c, b: c.alter_client_quotas(dict(b.get("entity", {})), dict(b.get("changes", {}))),
    "alter-scram": lambda c, b: c.alter_scram_credentials(
        [ScramUpsertion(str(u["user"]), str(u["mechanism"]), str(u["password"]), int(u.get("iterations", 0)))
         for u in _list(b, "upsertions")],
        [(str(d["user"]), str(d["mechanism"])) for d in _list(b, "deletions")],
    ),
    "create-token": lambda c, b: c.create_delegation_token(
        str(b.get("owner", "")), str(b.get("requester", b.get("owner", ""))),
        [str(r) for r in _list(b, "renewers")], _int(b, "max_lifetime_ms", -1),
    ),
    "renew-token": lambda c, b: c.renew_delegation_token(str(b.get("hmac", "")), str(b.get("principal", "")),
                                                          _int(b, "period_ms", -1)),
    "expire-token": lambda c, b: c.expire_delegation_token(str(b.get("hmac", "")), str(b.get("principal", "")),
                                                           _int(b, "period_ms", -1)),
}


def to_json(value: Any) -> Any:
    """Results as JSON: outcomes and errors by their own `to_json`, containers recursively."""
    if isinstance(value, TopicOutcome | IsrChangeOutcome | HeartbeatReply | TokenInfo | ControllerError
                  | OngoingReassignment):
        return value.to_json()
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def describe(controller: QuorumController) -> dict[str, Any]:
    image = controller.committed_image
    leader = controller.leader
    return {
        "node_id": controller.node_id,
        "active": controller.is_active,
        "leader_id": leader.leader_id,
        "leader_address": controller.leader_address(leader.leader_id),
        "epoch": leader.epoch,
        "committed_offset": controller.committed_offset,
        "metadata_version": image.features.metadata_version,
        "features": dict(image.features.finalized),
        "brokers": {
            str(b.broker_id): {"epoch": b.epoch, "fenced": b.fenced, "in_controlled_shutdown": b.in_controlled_shutdown,
                               "rack": b.rack}
            for b in image.cluster.brokers.values()
        },
        "controllers": {
            str(c.controller_id): {
                "incarnation_id": c.incarnation_id,
                "endpoints": [f"{e.name}://{e.host}:{e.port}" for e in c.listeners],
                "features": {f.name: [f.min_supported_version, f.max_supported_version] for f in c.supported_features},
            }
            for c in image.cluster.controllers.values()
        },
        "quorum": {  # the committed KRaftVersion / Voters records (KIP-853); empty under a static quorum
            "kraft_version": image.voters.kraft_version,
            "voters": {
                str(v.voter_id): {"directory_id": v.directory_id,
                                  "endpoints": [f"{e.name}://{e.host}:{e.port}" for e in v.endpoints]}
                for v in image.voters.voters.values()
            },
        },
        "topics": {
            t.name: {"topic_id": t.topic_id, "partitions": len(t.partitions)} for t in image.topics.by_id.values()
        },
        "partitions": image.topics.partition_count(),
        "acls": len(image.acls.acls),
        "scram_credentials": len(image.scram.credentials),
        "delegation_tokens": len(image.delegation_tokens.tokens),
        "next_producer_id": image.producer_ids.next_producer_id,
    }


def describe_topic(controller: QuorumController, name: str) -> dict[str, Any]:
    topic = controller.committed_image.topics.by_name.get(name)
    if topic is None:
        raise UnknownTopicError(f"topic {name!r} does not exist")
    return {"name": name, "topic_id": topic.topic_id,
            "partitions": {str(p): partition_json(r) for p, r in sorted(topic.partitions.items())}}


class AdminServer:
    """Serves one controller; `port=0` picks a free port (see `address`)."""

    def __init__(self, controller: QuorumController, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None) -> None:
        self.controller = controller
        self._token = token
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="admin-http", daemon=True)

    @property
    def address(self) -> str:
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"{host}:{port}"

    def start(self) -> AdminServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class AdminHandler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # the stdlib's signature
                log.debug("admin %s", format % args)

            def do_GET(self) -> None:
                self._serve(lambda: self._read())

            def do_POST(self) -> None:
                self._serve(lambda: self._write())

            def _read(self) -> Any:
                if self.path == "/v1/describe":
                    return describe(server.controller)
                if self.path.startswith("/v1/topics/"):
                    return describe_topic(server.controller, self.path.removeprefix("/v1/topics/"))
                raise LookupError(self.path)

            def _write(self) -> Any:
                operation = OPERATIONS.get(self.path.removeprefix("/v1/"))
                if operation is None:
                    raise LookupError(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY_BYTES:
                    raise InvalidRequestError(f"request body over {MAX_BODY_BYTES} bytes")
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError as error:
                    raise InvalidRequestError(f"the body is not JSON: {error}") from None
                if not isinstance(body, dict):
                    raise InvalidRequestError("the body must be a JSON object")
                try:
                    future = operation(server.controller, body)
                except (KeyError, TypeError, ValueError) as error:
                    raise InvalidRequestError(f"malformed request: {error!r}") from None
                return to_json(future.result(REQUEST_TIMEOUT_S))

            def _serve(self, action: Callable[[], Any]) -> None:
                if server._token is not None:
                    given = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    if not hmac.compare_digest(given.encode(), server._token.encode()):
                        self._send(401, {"error": {"code": "SASL_AUTHENTICATION_FAILED",
                                                   "message": "missing or wrong admin token"}})
                        return
                try:
                    self._send(200, {"result": action()})
                except ControllerError as error:
                    self._send(error.http_status, {"error": error.to_json()})
                except LookupError:
                    self._send(404, {"error": {"code": "INVALID_REQUEST",
                                               "message": f"no such endpoint {self.command} {self.path}"}})
                except TimeoutError:
                    self._send(504, {"error": {"code": "REQUEST_TIMED_OUT",
                                               "message": "the request was not committed in time"}})

            def _send(self, status: int, document: dict[str, Any]) -> None:
                payload = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return AdminHandler
