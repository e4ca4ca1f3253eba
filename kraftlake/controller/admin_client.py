"""The admin client: finds the active controller among the configured nodes and calls its JSON API.

A standby's NOT_CONTROLLER answer names the leader's address, which the client follows; an unreachable
node or an election in progress is retried on the other nodes until `timeout_s` runs out.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

RETRYABLE = {"NOT_CONTROLLER", "REQUEST_TIMED_OUT"}


class AdminError(Exception):
    """The controller refused the request (`code` is Kafka's error name) or could not be reached."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"{code}: {message}")


class AdminClient:
    def __init__(self, addresses: Sequence[str], token: str | None = None, timeout_s: float = 60.0) -> None:
        if not addresses:
            raise AdminError("INVALID_CONFIG", "no controller admin address given")
        self.addresses = list(addresses)
        self._token = token
        self.timeout_s = timeout_s
        self._preferred = self.addresses[0]

    def call(self, operation: str, body: dict[str, Any] | None = None) -> Any:
        return self._request("POST", f"/v1/{operation}", body or {})

    def describe(self) -> dict[str, Any]:
        return self._request("GET", "/v1/describe", None)

    def describe_topic(self, name: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/topics/{name}", None)

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        deadline = time.monotonic() + self.timeout_s
        last_error = AdminError("NOT_CONTROLLER", "no controller answered")
        candidates = [self._preferred, *[a for a in self.addresses if a != self._preferred]]
        attempt = 0
        while time.monotonic() < deadline:
            address = candidates[attempt % len(candidates)]
            attempt += 1
            try:
                status, document = self._send(address, method, path, body)
            except OSError as error:
                last_error = AdminError("NETWORK_EXCEPTION", f"controller at {address} is unreachable ({error})")
                time.sleep(min(0.05 * attempt, 0.5))
                continue
            if status == 200:
                self._preferred = address
                return document["result"]
            refusal = document.get("error", {})
            last_error = AdminError(str(refusal.get("code", status)), str(refusal.get("message", "")))
            if refusal.get("code") not in RETRYABLE:
                raise last_error
            leader_address = refusal.get("leader_address")
            if leader_address and leader_address != address:
                candidates = [leader_address, *[a for a in candidates if a != leader_address]]
                attempt = 0
            else:
                time.sleep(min(0.05 * attempt, 0.5))  # an election or an activation: give it a moment
        raise last_error

    def _send(self, address: str, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://{address}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            payload = error.read()
            try:
                return error.code, json.loads(payload)
            except ValueError:
                return error.code, {"error": {"code": str(error.code), "message": payload.decode(errors="replace")}}
