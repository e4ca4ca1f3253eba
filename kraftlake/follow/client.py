"""One TCP connection to a KRaft controller listener: TLS when `security.protocol` says so, ApiVersions, then
SaslHandshake + SaslAuthenticate for SASL_*, then requests at the highest versions both sides speak
(`kraftlake.records.rpc` holds the messages, `kraftlake.follow.security` the settings and the SASL mechanisms).
"""

from __future__ import annotations

import socket
import ssl
import struct
from dataclasses import dataclass
from typing import Any

from kraftlake.follow.security import PLAINTEXT, Security, SecurityError, sasl_exchange
from kraftlake.records import rpc
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.rpc_frames import decode_response, encode_request
from kraftlake.records.schema import StructSchema

CLIENT_ID = "kraftlake-follow"
_SIZE = struct.Struct(">i")
_MAX_RESPONSE = 256 << 20  # a Fetch asks for far less (`PartitionMaxBytes`); a larger size is not Kafka talking

# Kafka's error codes (org.apache.kafka.common.protocol.Errors) that the observer tells apart.
ERROR_NAMES = {
    -1: "UNKNOWN_SERVER_ERROR", 1: "OFFSET_OUT_OF_RANGE", 3: "UNKNOWN_TOPIC_OR_PARTITION", 6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT", 8: "BROKER_NOT_AVAILABLE", 29: "TOPIC_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED", 33: "UNSUPPORTED_SASL_MECHANISM", 34: "ILLEGAL_SASL_STATE",
    35: "UNSUPPORTED_VERSION", 58: "SASL_AUTHENTICATION_FAILED", 41: "NOT_CONTROLLER", 42: "INVALID_REQUEST",
    74: "FENCED_LEADER_EPOCH", 75: "UNKNOWN_LEADER_EPOCH", 98: "SNAPSHOT_NOT_FOUND", 99: "POSITION_OUT_OF_RANGE",
    100: "UNKNOWN_TOPIC_ID", 103: "INCONSISTENT_TOPIC_ID", 104: "INCONSISTENT_CLUSTER_ID",
}


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"error {code}")


class FollowError(Exception):
    """Following cannot go on as configured: the message names the endpoint and, where it matters, the offset."""


class Unreachable(FollowError):
    """A controller that does not answer (down, restarting, wrong port): the observer tries another."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_endpoints(text: str) -> list[Endpoint]:
    """`HOST:PORT[,HOST:PORT…]` (Kafka's `controller.quorum.bootstrap.servers` form)."""
    endpoints = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise FollowError(f"{item!r} in {text!r}: not HOST:PORT")
        endpoints.append(Endpoint(host.strip("[]"), int(port)))
    if not endpoints:
        raise FollowError(f"{text!r}: no controller endpoint given")
    return endpoints


@dataclass(frozen=True)
class Versions:
    """The versions this connection uses, the highest both sides speak."""

    fetch: int
    fetch_snapshot: int


class ControllerConnection:
    """A blocking connection; every failure to reach or understand the endpoint raises naming it."""

    def __init__(self, endpoint: Endpoint, timeout_s: float, security: Security = PLAINTEXT) -> None:
        self.endpoint = endpoint
        self._timeout_s = timeout_s
        self._correlation = 0
        try:
            self._socket = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout_s)
        except OSError as error:
            raise Unreachable(f"{endpoint}: cannot connect: {error.strerror or error}") from None
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if security.uses_ssl:
                self._socket = self._tls(security)
            offered = self._negotiate()
            if security.uses_sasl:
                self._authenticate(security)
            self.versions = self._choose(offered)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._socket.close()

    def call(self, api_key: int, body: Any, wait_s: float = 0.0) -> Any:
        """Send one request and return its response body; `wait_s` is how long the server may hold it."""
        version = self.versions.fetch if api_key == rpc.FETCH else self.versions.fetch_snapshot
        return self._call(api_key, version, body, wait_s)

    def _tls(self, security: Security) -> socket.socket:
        try:
            context = security.ssl_context()
            return context.wrap_socket(self._socket, server_hostname=self.endpoint.host)
        except SecurityError as error:
            raise FollowError(f"{self.endpoint}: {error}") from None
        except ssl.SSLError as error:  # a refused certificate is not cured by retrying
            raise FollowError(f"{self.endpoint}: TLS handshake failed: {error.reason or error}") from None
        except OSError as error:
            raise Unreachable(f"{self.endpoint}: TLS handshake failed: {error.strerror or error}") from None

    def _authenticate(self, security: Security) -> None:
        """SaslHandshake v1, then SaslAuthenticate v2 rounds until the mechanism is done (KIP-152)."""
        handshake = self._call(rpc.SASL_HANDSHAKE, 1, rpc.SaslHandshakeRequest(security.mechanism), 0.0)
        if handshake.error_code:
            offered = ", ".join(handshake.mechanisms) or "none"
            raise FollowError(f"{self.endpoint}: SASL mechanism {security.mechanism} refused "
                              f"({error_name(handshake.error_code)}; the listener offers {offered})")
        exchange = sasl_exchange(security)
        challenge: bytes | None = None
        try:
            while (message := exchange.respond(challenge)) is not None:
                answer = self._call(rpc.SASL_AUTHENTICATE, 2, rpc.SaslAuthenticateRequest(message), 0.0)
                if answer.error_code:
                    reason = answer.error_message or error_name(answer.error_code)
                    raise FollowError(f"{self.endpoint}: authentication as {security.username!r} with "
                                      f"{security.mechanism} refused: {reason}")
                challenge = answer.auth_bytes
        except SecurityError as error:
            raise FollowError(f"{self.endpoint}: {error}") from None

    def _negotiate(self) -> dict[int, tuple[int, int]]:
        """The versions the listener offers per API (asked before authenticating, as Kafka's clients do)."""
        response = self._call(rpc.API_VERSIONS, 3, rpc.ApiVersionsRequest(CLIENT_ID, "1"), 0.0)
        if response.error_code:
            raise FollowError(f"{self.endpoint}: ApiVersions failed with {error_name(response.error_code)}")
        return {key.api_key: (key.min_version, key.max_version) for key in response.api_keys}

    def _choose(self, offered: dict[int, tuple[int, int]]) -> Versions:
        if rpc.FETCH_SNAPSHOT not in offered:
            raise FollowError(
                f"{self.endpoint}: not a KRaft controller listener (it offers no FetchSnapshot): give "
                "--bootstrap-controllers the controllers' listener (controller.quorum.bootstrap.servers)"
            )
        return Versions(self._highest(offered, rpc.FETCH_REQUEST), self._highest(offered, rpc.FETCH_SNAPSHOT_REQUEST))

    def _highest(self, offered: dict[int, tuple[int, int]], schema: StructSchema) -> int:
        low, high = offered.get(schema.cls.API_KEY, (0, -1))
        version = min(high, schema.max_version)
        if version < max(low, schema.min_version):
            raise FollowError(
                f"{self.endpoint}: speaks {schema.name} versions {low}-{high}, kraftlake "
                f"{schema.min_version}-{schema.max_version} (Kafka 3.3 or later is needed)"
            )
        return version

    def _call(self, api_key: int, version: int, body: Any, wait_s: float) -> Any:
        self._correlation += 1
        request = encode_request(api_key, version, self._correlation, CLIENT_ID, body)
        self._socket.settimeout(self._timeout_s + wait_s)
        name = rpc.API_NAMES[api_key]
        try:
            self._socket.sendall(_SIZE.pack(len(request)) + request)
            (size,) = _SIZE.unpack(self._receive(4, name))
            if not 0 < size <= _MAX_RESPONSE:
                raise FollowError(f"{self.endpoint}: {name} response of {size} bytes: is this a Kafka listener?")
            raw = self._receive(size, name)
        except TimeoutError:
            raise Unreachable(f"{self.endpoint}: no {name} response within {self._timeout_s + wait_s:.0f} s") from None
        except OSError as error:
            raise Unreachable(f"{self.endpoint}: {name} failed: {error.strerror or error}") from None
        try:
            correlation, response = decode_response(api_key, version, raw, str(self.endpoint))
        except RecordFormatError as error:
            raise FollowError(str(error)) from None
        if correlation != self._correlation:
            raise FollowError(f"{self.endpoint}: {name} response for request {correlation}, not {self._correlation}")
        return response

    def _receive(self, size: int, name: str) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self._socket.recv(min(size - len(chunks), 1 << 20))
            if not chunk:
                raise Unreachable(f"{self.endpoint}: closed the connection before its {name} response")
            chunks += chunk
        return bytes(chunks)
