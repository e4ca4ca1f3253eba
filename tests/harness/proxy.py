"""A TCP proxy on loopback that can go silent: what a follower meets when a firewall or NAT drops a connection's
state, or a peer vanishes without a FIN or RST. Real sockets and threads, nothing mocked.

`cut()` black-holes the connections open now: their bytes are read and dropped in both directions, and they
stay open (the follower's reads simply never return), while new connections are forwarded. `blackhole()` does
the same to every connection, new ones included, until `resume()`. Every socket has a timeout and every thread
ends on `close()`, so a test never hangs on the proxy itself."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from kraftlake.cli.kafka_node import HOST, KafkaNode, free_ports, kafka_uuid

_TICK_S = 0.1  # how often a pump looks at the switches


class _Link:
    """One proxied connection: a client socket, its upstream socket, and whether it is black-holed."""

    def __init__(self, client: socket.socket, upstream: socket.socket, silent: bool) -> None:
        self.client = client
        self.upstream = upstream
        self.silent = silent

    def close(self) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.close()


class BlackholeProxy:
    """Listens on 127.0.0.1:`port` (a free one unless given) and forwards to `target_port` on loopback."""

    def __init__(self, target_port: int, port: int | None = None) -> None:
        self.target_port = target_port
        self.port = port or free_ports(1)[0]
        self._listener = socket.create_server((HOST, self.port))
        self._listener.settimeout(_TICK_S)
        self._silent = False
        self._closed = threading.Event()
        self._links: list[_Link] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    @property
    def endpoint(self) -> str:
        return f"{HOST}:{self.port}"

    def cut(self) -> None:
        """Black-hole the connections open now; new ones are forwarded."""
        with self._lock:
            for link in self._links:
                link.silent = True

    def blackhole(self) -> None:
        """Black-hole every connection, open now or accepted later, until `resume()`."""
        with self._lock:
            self._silent = True
        self.cut()

    def resume(self) -> None:
        """Forward new connections again; those black-holed stay so (the follower must open new ones)."""
        with self._lock:
            self._silent = False

    def close(self) -> None:
        self._closed.set()
        for thread in list(self._threads):
            thread.join(timeout=5)
        self._listener.close()
        with self._lock:
            for link in self._links:
                link.close()

    def __enter__(self) -> BlackholeProxy:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
                client.settimeout(5)  # a forwarded send never blocks a pump for long
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection((HOST, self.target_port), timeout=5)
            except OSError:
                client.close()  # nobody behind the proxy: the client sees the refusal as it would directly
                continue
            with self._lock:
                link = _Link(client, upstream, self._silent)
                self._links.append(link)
            thread = threading.Thread(target=self._pump, args=(link,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _pump(self, link: _Link) -> None:
        """Both directions of one link; bytes of a silent link are read and dropped."""
        peers = {link.client: link.upstream, link.upstream: link.client}
        try:
            while not self._closed.is_set() and peers:
                readable, _, _ = select.select(list(peers), [], [], _TICK_S)
                for sock in readable:
                    data = sock.recv(1 << 16)
                    if not data:
                        if not link.silent:
                            return
                        del peers[sock]  # silent: the other side is not told either
                        break
                    if not link.silent:
                        peers[sock].sendall(data)
        except OSError:
            return
        finally:
            link.close()


@contextlib.contextmanager
def proxied_node(directory: Path) -> Iterator[tuple[KafkaNode, BlackholeProxy]]:
    """A one-node cluster whose controller endpoint, in the voter set and in every Fetch response, is the
    proxy's: the follower cannot go around it (the node's own broker talks to its controller through it too)."""
    broker_port, controller_port = free_ports(2)
    with BlackholeProxy(controller_port) as proxy:
        advertised = f"PLAINTEXT://{HOST}:{broker_port},CONTROLLER://{proxy.endpoint}"
        node = KafkaNode(directory, broker_port=broker_port, controller_port=controller_port,
                         quorum=[proxy.endpoint], properties={"advertised.listeners": advertised})
        node.format(kafka_uuid(), standalone=True)
        node.start()
        try:
            yield node, proxy
        finally:
            proxy.resume()
            node.stop(grace=5.0)
