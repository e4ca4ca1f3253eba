"""One controller node in a real process: a quorum voter (the quorum's own server) with the controller,
its admin API, the topic producer and the snapshot generator on top, all reading the same committed log.
The log prefix behind a snapshot is only deleted once the topic producer has copied it to Kafka."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from kraftlake.bridge.publisher import PublisherConfig, TopicProducer
from kraftlake.controller.admin_api import AdminServer
from kraftlake.controller.admin_client import AdminClient
from kraftlake.controller.config import controller_config
from kraftlake.controller.controller import QuorumController
from kraftlake.controller.raft_log import RaftMetadataLog
from kraftlake.controller.registration import (
    ControllerRegistrationRequest,
    new_incarnation_id,
)
from kraftlake.controller.snapshot_generator import SnapshotGenerator
from kraftlake.controller.versions import SUPPORTED_FEATURES
from kraftlake.raft.config import load_config
from kraftlake.raft.server import QuorumServer
from kraftlake.raft.voters import CONTROLLER_LISTENER
from kraftlake.settings import ControllerFile, load_controller_file

DEFAULT_CONTROLLER_CONFIG = Path("conf/controller.toml")
TOKEN_ENV = "KRAFTLAKE_ADMIN_TOKEN"
GIL_SWITCH_INTERVAL_S = 0.001
log = logging.getLogger(__name__)


def admin_token(settings: ControllerFile) -> str | None:
    """$KRAFTLAKE_ADMIN_TOKEN, else [admin] token; None: no token required."""
    return os.environ.get(TOKEN_ENV) or settings.admin.token or None


async def serve(quorum_config_path: Path, settings_path: Path, node_id: int, bootstrap: str | None) -> None:
    settings = load_controller_file(settings_path)
    quorum_config = load_config(quorum_config_path)
    config = controller_config(settings_path, settings, node_id)
    server = QuorumServer(quorum_config, node_id)
    metadata_log = RaftMetadataLog(server.client, asyncio.get_running_loop())
    # Every controller registers (KIP-919): a voter, or an observer that may join the voters (KIP-853).
    raft_host, raft_port = quorum_config.nodes[node_id]
    registration = ControllerRegistrationRequest(
        node_id, new_incarnation_id(), [(CONTROLLER_LISTENER, raft_host, raft_port)], dict(SUPPORTED_FEATURES)
    )
    controller = QuorumController(
        metadata_log, config, controller_addresses=settings.admin.addresses,
        registration=registration, registration_sender=_registration_sender(settings),
    ).start()
    producer = None
    if bootstrap:
        topic = settings.publisher.topic
        producing = TopicProducer(metadata_log, node_id, PublisherConfig(bootstrap, topic)).start()
        server.client.hold_log_prefix(lambda: producing.durable_offset() + 1)
        producer = producing
    snapshots = SnapshotGenerator(
        controller, metadata_log, config.snapshot_max_new_record_bytes, config.snapshot_max_interval_ms,
    ).start()
    address = settings.admin.addresses.get(node_id, "127.0.0.1:0")
    host, _, port = address.rpartition(":")
    admin = AdminServer(controller, host, int(port), admin_token(settings)).start()
    print(f"controller {node_id}: admin API on http://{admin.address}", flush=True)
    loop = asyncio.get_running_loop()
    try:
        await server.serve()
    finally:
        # Off the loop: the controller's thread may be waiting on a call it made to the loop.
        await loop.run_in_executor(None, admin.close)
        await loop.run_in_executor(None, snapshots.close)
        await loop.run_in_executor(None, controller.close)
        if producer is not None:
            await loop.run_in_executor(None, producer.close)


def _registration_sender(settings: ControllerFile) -> Callable[[ControllerRegistrationRequest], None] | None:
    """How a standby hands its registration to the active controller: the admin API, as the
    ControllerRegistration RPC does in Kafka."""
    addresses = list(settings.admin.addresses.values())
    if not addresses:
        return None
    client = AdminClient(addresses, admin_token(settings), timeout_s=10.0)
    return lambda request: client.call("register-controller", request.to_json())


def run_controller_node(quorum_config_path: Path, settings_path: Path, node_id: int, bootstrap: str | None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # The Raft loop is I/O-bound and shares the GIL with CPU-bound threads (controller replay, snapshots):
    # each syscall it makes may then wait a whole switch interval (5 ms by default) to get the GIL back.
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    asyncio.run(serve(quorum_config_path, settings_path, node_id, bootstrap))
    return 0
