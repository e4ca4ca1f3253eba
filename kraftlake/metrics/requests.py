"""`kraftlake ui`'s request latency by route: an ASGI middleware timing each HTTP request into a histogram
labelled by the route's template (`/api/v1/clusters/{cluster}/image`), never the raw path, so the series stay
as few as the routes."""

from __future__ import annotations

import time

from prometheus_client import Histogram
from starlette.types import ASGIApp, Receive, Scope, Send

UNMATCHED = "unmatched"  # no route: static files, a 404


def request_histogram() -> Histogram:
    """Unregistered: the endpoint's registry takes it."""
    return Histogram("kraftlake_ui_request_duration_seconds", "Time to answer an HTTP request, by route.",
                     ["route", "method"], registry=None)


class RequestLatency:
    def __init__(self, app: ASGIApp, histogram: Histogram) -> None:
        self.app = app
        self.histogram = histogram

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            # the router puts the matched route into the (shared) scope
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            self.histogram.labels(route, scope["method"]).observe(time.perf_counter() - started)
