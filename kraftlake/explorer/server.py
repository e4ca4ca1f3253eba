"""Serving the explorer: which interface, which token, which Host names; then uvicorn.

Loopback is the default. Any other interface carries the warehouse's metadata (topic names, principals,
hosts) beyond the machine, so it needs an access token (or a reverse proxy with its own authentication in
front of a loopback server); without one the server refuses to start, in one line.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from starlette.middleware import Middleware
from uvicorn import Config, Server

from kraftlake.explorer.app import LOG, Settings, create_app
from kraftlake.explorer.clusters import Clusters
from kraftlake.explorer.errors import UnsafeBind

LOOPBACK_NAMES = ("localhost",)
TOKEN_ENV = "KRAFTLAKE_UI_TOKEN"
GRACEFUL_STOP_S = 5  # for requests under way when asked to stop


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 0  # 0: a free port
    token: str | None = None


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(options: ServeOptions) -> None:
    """Refuse a non-loopback interface without a token (UnsafeBind)."""
    if not is_loopback(options.host) and not options.token:
        raise UnsafeBind(f"--host {options.host} serves the warehouse beyond this machine: give --token (or "
                         f"${TOKEN_ENV}), or keep 127.0.0.1 behind a reverse proxy that authenticates")
    if options.token is not None and len(options.token) < 16:
        raise UnsafeBind("--token must be at least 16 characters (e.g. `python -c 'import secrets; "
                         "print(secrets.token_urlsafe())'`)")


def allowed_hosts(options: ServeOptions) -> list[str]:
    """Loopback without a token: only loopback Host names (a page elsewhere cannot rebind a name of its own to
    127.0.0.1 and read the API). With a token, any (the token protects it)."""
    return ["*"] if options.token else sorted({"127.0.0.1", "localhost", "[::1]", "::1", options.host})


def bound_socket(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the URL is announced: a client may connect as soon as it reads it,
    and no other process can take the port in between."""
    bare = host.strip("[]")
    sock = socket.socket(socket.AF_INET6 if ":" in bare else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bare, port))
    except OSError as error:
        sock.close()
        raise UnsafeBind(f"cannot listen on {host}:{port}: {error.strerror}") from None
    sock.listen(128)
    return sock


def serve(clusters: Clusters, options: ServeOptions, stop: threading.Event,
          announce: Callable[[str], None] = print, middleware: Sequence[Middleware] = (),
          notes: Sequence[str] = ()) -> None:
    """Run the explorer until `stop` is set (`kraftlake.stopping`: SIGINT, SIGTERM); `announce` receives its URL
    (with the token: the one time it is printed). What a refused request's warehouse said, with its location,
    goes to stderr (`LOG`), never to the client. `middleware` wraps the app (the metrics' request timer) and
    `notes` are announced after the URL (the metrics' address)."""
    check_bind(options)
    sock = bound_socket(options.host, options.port)
    port = sock.getsockname()[1]
    app = create_app(Settings(token=options.token, allowed_hosts=allowed_hosts(options), served=clusters))
    shown = f"[{options.host.strip('[]')}]" if ":" in options.host else options.host
    suffix = f"/?token={options.token}" if options.token else "/"
    for layer in middleware:
        app.add_middleware(layer.cls, *layer.args, **layer.kwargs)
    announce(f"kraftlake ui: http://{shown}:{port}{suffix}  ({clusters.describe()}; Ctrl-C stops)")
    for note in notes:
        announce(note)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("kraftlake ui: %(message)s"))
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
    config = Config(app, log_level="warning", access_log=False, server_header=False,
                            timeout_graceful_shutdown=GRACEFUL_STOP_S)
    StoppableServer(config, stop).run(sockets=[sock])


class StoppableServer(Server):
    """uvicorn's server, stopped by the caller's event instead of its own signal handlers: those re-raise the
    signal once the server stopped, so Ctrl-C ended in a traceback (exit 130) and SIGTERM in exit 143."""

    def __init__(self, config: Config, stop: threading.Event) -> None:
        super().__init__(config)
        self.stop = stop

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def on_tick(self, counter: int) -> bool:
        self.should_exit = self.should_exit or self.stop.is_set()
        return await super().on_tick(counter)
