"""A quorum node as a process: the RaftClient driver plus TCP on loopback, and the small client side
(`append`, `describe`) that the CLI, the tests and the benchmark use.

Peers exchange one-way Raft frames over one outgoing connection per peer; a frame that cannot be sent is
dropped (Raft retries by itself). Client calls are request/response frames on their own connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from typing import Any

from kraftlake.raft.client import RaftClient
from kraftlake.raft.config import QuorumConfig
from kraftlake.raft.core import NotLeaderError, VoterChangeError
from kraftlake.raft.messages import Envelope
from kraftlake.raft.transport import decode_message, encode_frame, encode_message, read_frame, request
from kraftlake.records.metadata_types import NoOpRecord

PEER_QUEUE_LIMIT = 10_000
RECONNECT_BACKOFF_S = 0.05
APPEND_TIMEOUT_S = 10.0
SHUTDOWN_GRACE_S = 2.0
AUTO_JOIN_INTERVAL_S = 0.5


class PeerLink:
    """The outgoing connection to one peer, (re)opened on demand; frames queued while it is down are dropped."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def send(self, frame: bytes) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        if self._queue.qsize() < PEER_QUEUE_LIMIT:
            self._queue.put_nowait(frame)

    async def _run(self) -> None:
        while True:
            frame = await self._queue.get()
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 1.0)
            except (OSError, TimeoutError):
                self._drain()
                await asyncio.sleep(RECONNECT_BACKOFF_S)
                continue
            try:
                while True:
                    writer.write(frame)
                    if self._queue.empty():
                        await writer.drain()
                    frame = await self._queue.get()
            except (OSError, ConnectionError):
                self._drain()
                writer.close()

    def _drain(self) -> None:
        while not self._queue.empty():
            self._queue.get_nowait()

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


class QuorumServer:
    """Runs one voter or observer until SIGTERM (graceful: a leader resigns, then exit) or SIGKILL."""

    def __init__(self, config: QuorumConfig, node_id: int) -> None:
        self.config = config
        self.node_id = node_id
        self.client = RaftClient(
            config.raft_config(node_id), config.node_dir(node_id), self._send, segment_bytes=config.segment_bytes
        )
        self.peers = {
            peer: PeerLink(host, port) for peer, (host, port) in config.nodes.items() if peer != node_id
        }
        self._connections: dict[asyncio.Task[Any], asyncio.StreamWriter] = {}

    def _send(self, envelope: Envelope) -> None:
        link = self.peers.get(envelope.destination)
        if link is not None:
            link.send(encode_message(envelope.source, envelope.message))

    async def serve(self) -> None:
        host, port = self.config.nodes[self.node_id]
        server = await asyncio.start_server(self._on_connection, host, port)
        self.client.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        kind = "voter" if self.node_id in self.config.voters else "observer"
        print(f"quorum {kind} {self.node_id} listening on {host}:{port}", flush=True)
        joining = loop.create_task(self._auto_join()) if self.config.auto_join else None
        await stop.wait()
        if joining is not None:
            joining.cancel()
        self.client.resign()
        await asyncio.sleep(0.1)  # let EndQuorumEpoch reach the voters
        server.close()
        await self._close_connections()
        await self.client.stop()
        for link in self.peers.values():
            link.close()

    async def _auto_join(self) -> None:
        """Kafka's controller.quorum.auto.join.enable: an observer asks whoever leads to add it as a voter
        (the leader adds it once it is caught up), once; a later removal is not undone."""
        while not self.client.core.is_voter:
            await asyncio.sleep(AUTO_JOIN_INTERVAL_S)
            leader = self.client.core.leader_id
            if leader is None or leader not in self.config.nodes:
                continue
            host, port = self.config.nodes[leader]
            with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError):
                await request(host, port, {"kind": "add_voter", "nodeId": self.node_id}, APPEND_TIMEOUT_S)

    async def _close_connections(self) -> None:
        """End every inbound connection so its handler returns by itself: Python 3.11's stream server logs a
        CancelledError traceback for a handler task still running (hence cancelled) when the loop ends."""
        for writer in self._connections.values():
            writer.close()
        handlers = list(self._connections)
        if handlers:
            _, late = await asyncio.wait(handlers, timeout=SHUTDOWN_GRACE_S)
            for task in late:  # stuck in an append: its answer no longer matters
                task.cancel()

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        try:
            while True:
                header, blobs = await read_frame(reader)
                kind = header.get("kind")
                if kind == "raft":
                    self.client.deliver(*decode_message(header, blobs))
                    continue
                if kind == "append":
                    response = await self._append(int(header.get("records", 1)))
                elif kind in ("add_voter", "remove_voter"):
                    response = await self._change_voters(kind == "add_voter", int(header["nodeId"]))
                elif kind == "describe":
                    response = self.client.describe()
                else:
                    response = {"error": f"unknown request kind {kind!r}"}
                writer.write(encode_frame(response))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            del self._connections[task]
            writer.close()

    async def _append(self, record_count: int) -> dict[str, Any]:
        try:
            offset = await asyncio.wait_for(self.client.append([NoOpRecord()] * record_count), APPEND_TIMEOUT_S)
        except NotLeaderError as error:
            return {"error": "not_leader", "leaderId": error.leader_id, "epoch": error.epoch}
        except TimeoutError:
            return {"error": "timeout"}
        return {"offset": offset, "epoch": self.client.epoch}


    async def _change_voters(self, add: bool, node_id: int) -> dict[str, Any]:
        try:
            offset = await asyncio.wait_for(self.client.change_voters(add, node_id), APPEND_TIMEOUT_S)
        except NotLeaderError as error:
            return {"error": "not_leader", "leaderId": error.leader_id, "epoch": error.epoch}
        except VoterChangeError as error:
            return {"error": error.code, "message": str(error)}
        except TimeoutError:
            return {"error": "timeout"}
        return {"offset": offset, "epoch": self.client.epoch, "voters": list(self.client.core.voters.ids)}


def run_node(config: QuorumConfig, node_id: int) -> int:
    server = QuorumServer(config, node_id)
    asyncio.run(server.serve())
    return 0


# -- the client side --------------------------------------------------------------------------------------


class QuorumUnavailable(Exception):
    """No voter answered, or none knows a leader."""


async def describe_quorum(config: QuorumConfig, timeout: float = 2.0) -> dict[str, Any]:
    """The leader's view (with every voter's end offset and lag), asking any reachable node for the leader."""
    views: dict[int, dict[str, Any]] = {}
    for node_id, (host, port) in sorted(config.nodes.items()):
        with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError):
            views[node_id] = await request(host, port, {"kind": "describe"}, timeout)
        view = views.get(node_id)
        if view is None:
            continue
        if view["role"] == "Leader":
            return view
        leader = view.get("leaderId")
        if leader in config.nodes and leader not in views:
            host, port = config.nodes[leader]
            with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError):
                leader_view = await request(host, port, {"kind": "describe"}, timeout)
                if leader_view["role"] == "Leader":
                    return leader_view
    if not views:
        raise QuorumUnavailable("no voter answered")
    raise QuorumUnavailable(f"no leader known; voters answering: {sorted(views)}")


class AppendSession:
    """Appends NoOpRecord batches through whichever node leads, following redirects, over kept connections."""

    def __init__(self, config: QuorumConfig, timeout: float = APPEND_TIMEOUT_S) -> None:
        self.config = config
        self.timeout = timeout
        self.leader: int | None = None
        self._connections: dict[int, tuple[asyncio.StreamReader, asyncio.StreamWriter]] = {}

    async def _call(self, node_id: int, header: dict[str, Any]) -> dict[str, Any]:
        if node_id not in self._connections:
            host, port = self.config.nodes[node_id]
            self._connections[node_id] = await asyncio.wait_for(asyncio.open_connection(host, port), 1.0)
        reader, writer = self._connections[node_id]
        try:
            writer.write(encode_frame(header))
            await writer.drain()
            response, _ = await asyncio.wait_for(read_frame(reader), self.timeout)
            return response
        except BaseException:
            self._connections.pop(node_id, None)
            writer.close()
            raise

    async def append(self, records: int = 1) -> dict[str, Any]:
        """One attempt: `{"offset", "epoch"}` once committed, or `{"error", ...}` (not_leader, unreachable)."""
        return await self._call_leader({"kind": "append", "records": records})

    async def change_voters(self, add: bool, node_id: int) -> dict[str, Any]:
        """One AddRaftVoter / RemoveRaftVoter attempt through the leader: `{"offset", "epoch", "voters"}` once
        the new voter set committed it, else `{"error", ...}` (not_leader, unreachable, Kafka's error codes)."""
        return await self._call_leader({"kind": "add_voter" if add else "remove_voter", "nodeId": node_id})

    async def _call_leader(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send `request` to the leader as far as this session knows it; on no answer or not_leader, move on to
        the leader named in the refusal, else the next node, for the caller's next attempt."""
        target = self.leader if self.leader is not None else min(self.config.voters)
        try:
            response = await self._call(target, request)
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            self.leader = self._next_after(target)
            return {"error": "unreachable", "node": target}
        if response.get("error") == "not_leader":
            leader = response.get("leaderId")
            self.leader = leader if leader in self.config.nodes else self._next_after(target)
        return response

    def _next_after(self, node_id: int) -> int:
        ordered = sorted(self.config.nodes)
        return ordered[(ordered.index(node_id) + 1) % len(ordered)]

    def close(self) -> None:
        for _, writer in self._connections.values():
            writer.close()
        self._connections.clear()


def print_describe(view: dict[str, Any]) -> None:
    """The shape of `kafka-metadata-quorum describe --status` followed by `--replication`."""
    replicas = view.get("replicas", [])
    followers = [r for r in replicas if r["nodeId"] != view["nodeId"]]
    lags = [r["lag"] for r in followers if r["lag"] is not None]
    fetch_ages = [r["lastFetchMsAgo"] for r in followers if r["lastFetchMsAgo"] is not None]
    out = sys.stdout
    out.write(f"LeaderId:              {view['leaderId']}\n")
    out.write(f"LeaderEpoch:           {view['leaderEpoch']}\n")
    out.write(f"HighWatermark:         {view['highWatermark']}\n")
    out.write(f"LogEndOffset:          {view['logEndOffset']}\n")
    out.write(f"MaxFollowerLag:        {max(lags) if lags else 0}\n")
    out.write(f"MaxFollowerLagTimeMs:  {max(fetch_ages) if fetch_ages else 0}\n")
    out.write(f"CurrentVoters:         {json.dumps(view['currentVoters'])}\n\n")
    out.write(f"{'NodeId':<8}{'LogEndOffset':<14}{'Lag':<8}{'LastFetchMsAgo':<16}Status\n")
    rows = [(r, "Leader" if r["nodeId"] == view["nodeId"] else "Follower") for r in replicas]
    rows += [(r, "Observer") for r in view.get("observers", [])]
    for replica, status in rows:
        lag = "-" if replica["lag"] is None else replica["lag"]
        age = "-" if replica["lastFetchMsAgo"] is None else replica["lastFetchMsAgo"]
        out.write(f"{replica['nodeId']:<8}{replica['logEndOffset']:<14}{lag!s:<8}{age!s:<16}{status}\n")
