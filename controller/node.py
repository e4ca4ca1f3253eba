"""One controller node in a real process: a quorum voter (the quorum's own server) with the controller,
its admin API, the publisher and the snapshot generator on top, all reading the same committed log. The
log prefix behind a snapshot is only deleted once the publisher has copied it to Kafka."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.admin_api import AdminServer
from controller.admin_client import AdminClient
from controller.config import ControllerConfig
from controller.controller import QuorumController
from controller.publisher import DEFAULT_TOPIC, MetadataPublisher, PublisherConfig
from controller.raft_log import RaftMetadataLog
from controller.registration import (
    CONTROLLER_LISTENER,
    ControllerRegistrationRequest,
    new_incarnation_id,
)
from controller.snapshot_generator import SnapshotGenerator
from controller.versions import SUPPORTED_FEATURES
from kraftlake.errors import UserFacingError
from raft.config import load_config
from raft.server import QuorumServer

DEFAULT_CONTROLLER_CONFIG = Path("conf/controller.toml")
TOKEN_ENV = "KRAFTLAKE_ADMIN_TOKEN"
GIL_SWITCH_INTERVAL_S = 0.001
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControllerSettings:
    """conf/controller.toml, parsed."""

    controller: dict[str, Any] = field(default_factory=dict)
    admin_addresses: dict[int, str] = field(default_factory=dict)
    admin_token: str | None = field(default=None, repr=False)
    bootstrap_servers: str = ""
    topic: str = DEFAULT_TOPIC

    def controller_config(self, node_id: int) -> ControllerConfig:
        try:
            return ControllerConfig.from_mapping({**self.controller, "node_id": node_id})
        except (TypeError, ValueError) as error:
            raise UserFacingError(f"bad [controller] settings: {error}") from None


def load_settings(path: Path) -> ControllerSettings:
    try:
        document = tomllib.loads(path.read_text())
    except OSError as error:
        raise UserFacingError(f"cannot read controller config {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise UserFacingError(f"{path}: {error}") from None
    admin = document.get("admin", {})
    publisher = document.get("publisher", {})
    token = os.environ.get(TOKEN_ENV) or admin.get("token") or None
    return ControllerSettings(
        controller=dict(document.get("controller", {})),
        admin_addresses={int(k): str(v) for k, v in admin.get("addresses", {}).items()},
        admin_token=token,
        bootstrap_servers=str(publisher.get("bootstrap_servers", "")),
        topic=str(publisher.get("topic", DEFAULT_TOPIC)),
    )


async def serve(quorum_config_path: Path, settings: ControllerSettings, node_id: int, bootstrap: str | None) -> None:
    quorum_config = load_config(quorum_config_path)
    server = QuorumServer(quorum_config, node_id)
    metadata_log = RaftMetadataLog(server.client, asyncio.get_running_loop())
    controller_config = settings.controller_config(node_id)
    registration = None
    if node_id in quorum_config.voters:  # observers replicate the log but are no controllers
        host, port = quorum_config.voters[node_id]
        registration = ControllerRegistrationRequest(
            node_id, new_incarnation_id(), [(CONTROLLER_LISTENER, host, port)], dict(SUPPORTED_FEATURES)
        )
    controller = QuorumController(
        metadata_log, controller_config, controller_addresses=settings.admin_addresses,
        registration=registration, registration_sender=_registration_sender(settings),
    ).start()
    publisher = None
    if bootstrap:
        publishing = MetadataPublisher(metadata_log, node_id, PublisherConfig(bootstrap, settings.topic)).start()
        server.client.hold_log_prefix(lambda: publishing.durable_offset() + 1)
        publisher = publishing
    snapshots = SnapshotGenerator(
        controller, metadata_log, controller_config.snapshot_max_new_record_bytes,
        controller_config.snapshot_max_interval_ms,
    ).start()
    address = settings.admin_addresses.get(node_id, "127.0.0.1:0")
    host, _, port = address.rpartition(":")
    admin = AdminServer(controller, host, int(port), settings.admin_token).start()
    print(f"controller {node_id}: admin API on http://{admin.address}", flush=True)
    loop = asyncio.get_running_loop()
    try:
        await server.serve()
    finally:
        # Off the loop: the controller's thread may be waiting on a call it made to the loop.
        await loop.run_in_executor(None, admin.close)
        await loop.run_in_executor(None, snapshots.close)
        await loop.run_in_executor(None, controller.close)
        if publisher is not None:
            await loop.run_in_executor(None, publisher.close)


def _registration_sender(settings: ControllerSettings) -> Callable[[ControllerRegistrationRequest], None] | None:
    """How a standby hands its registration to the active controller: the admin API, as the
    ControllerRegistration RPC does in Kafka."""
    addresses = list(settings.admin_addresses.values())
    if not addresses:
        return None
    client = AdminClient(addresses, settings.admin_token, timeout_s=10.0)
    return lambda request: client.call("register-controller", request.to_json())


def run_controller_node(quorum_config: Path, controller_config: Path, node_id: int, bootstrap: str | None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # The Raft loop is I/O-bound and shares the GIL with CPU-bound threads (controller replay, snapshots):
    # each syscall it makes may then wait a whole switch interval (5 ms by default) to get the GIL back.
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    asyncio.run(serve(quorum_config, load_settings(controller_config), node_id, bootstrap))
    return 0
