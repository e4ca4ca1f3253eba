"""`--metrics-address HOST:PORT`: Prometheus' text format over HTTP at `/metrics` (prometheus-client's own
server, in a thread of its own), loopback when only a port is given: the metrics name topics and hosts, so
another interface is the operator's explicit choice."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from kraftlake.metrics.errors import MetricsError

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Address:
    host: str
    port: int  # 0: a free port, announced

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_address(text: str) -> Address:
    """`HOST:PORT`, `[IPV6]:PORT`, `:PORT` or `PORT` (the last two on loopback)."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or LOOPBACK
    if not port.isdigit() or int(port) > 65535:
        raise MetricsError(f"--metrics-address {text}: not HOST:PORT (a port from 0 to 65535)")
    return Address(host, int(port))


class MetricsEndpoint:
    """The endpoint serving `collectors` (and the process' CPU and memory); `close()` stops it."""

    def __init__(self, address: Address, collectors: Iterable[Collector]) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        for collector in collectors:
            self.registry.register(collector)
        try:
            self._server, self._thread = start_http_server(address.port, address.host, self.registry)
        except OSError as error:
            raise MetricsError(f"--metrics-address {address}: {error.strerror or error}") from None
        self.address = Address(address.host, self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


@contextlib.contextmanager
def metrics_served(address: str | None, collectors: Iterable[Collector]) -> Iterator[MetricsEndpoint | None]:
    """The endpoint while the command runs (None: no `--metrics-address`, metrics off); the caller announces
    its `url` where it announces its own."""
    if address is None:
        yield None
        return
    endpoint = MetricsEndpoint(parse_address(address), collectors)
    try:
        yield endpoint
    finally:
        endpoint.close()
