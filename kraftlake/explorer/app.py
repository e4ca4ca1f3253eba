"""`create_app(settings)`: the explorer as one ASGI app, its JSON API under `/api/v1` and its pages under
`/clusters/{cluster}` (assets under `/-/`, a prefix no cluster takes), for one warehouse or every cluster of a
fleet (`/fleet`: every cluster's health on one time axis, from each cluster's own timeline series).

Read-only by construction: every route is a GET over `WarehouseReader`. Errors are RFC 9457 problem+json
whose `detail` is the CLI's one line (the reader's own message for a moment it cannot answer). With a token,
every request must carry it (`Authorization: Bearer`, or the cookie a `?token=` link sets once); the allowed
Host names stop a web page from reaching a loopback server through DNS rebinding.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
from deltalake.exceptions import DeltaError
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BeforeValidator
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from kraftlake import inputs
from kraftlake.explorer import timeline as tl
from kraftlake.explorer.clusters import Clusters, Member, OneCluster
from kraftlake.explorer.errors import BadRequest, ExplorerError, NoHistory
from kraftlake.explorer.schemas import (
    BrokerSpan,
    ChangesPage,
    Cluster,
    Epoch,
    Event,
    FleetOut,
    FleetRow,
    Gap,
    HistoryPage,
    HistoryRange,
    ImageSummary,
    Moment,
    Point,
    PrincipalHistory,
    Problem,
    Quiet,
    RowsPage,
    TimelineOut,
    TopicsPage,
    TopicSummary,
)
from kraftlake.explorer.service import MAX_PAGE_SIZE, Explorer
from kraftlake.explorer.words import duration
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.errors import LakeError, TimeTravelError, UnknownKeyError
from kraftlake.lake.history import iso_time
from kraftlake.lake.store_errors import is_store_error

API = "/api/v1"
STATIC = Path(__file__).parent / "static"
TOKEN_COOKIE = "kraftlake_ui_token"
EVENTS_SHOWN = 1000
BUCKETS = 1000  # points per series when zoomed out: about one per pixel of a wide screen
PROBLEM = "application/problem+json"
DETAIL_CHARS = 600
LOG = logging.getLogger("kraftlake.explorer")  # `kraftlake ui` prints it on stderr


FLEET_SERIES = ("offline", "under_min_isr")  # the timeline's own series a fleet row shows (and fenced brokers)


@dataclass(frozen=True)
class Settings:
    """What the app serves: one warehouse's reads (`explorer`), or any `Clusters` (`served`: a fleet); who may
    ask (`token`, `allowed_hosts`)."""

    explorer: Explorer | None = None
    token: str | None = None
    allowed_hosts: list[str] = field(default_factory=lambda: ["*"])
    served: Clusters | None = None

    @property
    def clusters(self) -> Clusters:
        if self.served is not None:
            return self.served
        assert self.explorer is not None, "Settings: give an explorer or the clusters served"
        return OneCluster(self.explorer)


def one_line(text: str) -> str:
    return " ".join(str(text).split())[:DETAIL_CHARS]


def problem_for(error: Exception, cluster: str | None) -> tuple[int, str, str] | None:
    """(status, title, one-line detail) of an error a request may meet; None: a bug (500). The detail names
    the cluster, never the warehouse's location (a path or URI of the server's): the server logs that."""
    named = f"cluster {cluster}: " if cluster else ""
    if isinstance(error, ExplorerError | inputs.InputError):
        return getattr(error, "status", 400), getattr(error, "title", "Bad request"), one_line(str(error))
    if isinstance(error, TimeTravelError | UnknownKeyError):
        return 404, "Not in the history", one_line(named + error.reason)
    if isinstance(error, LakeError):
        return 409, "Warehouse refused", one_line(named + error.reason)
    if is_store_error(error):
        return 502, "Store unavailable", f"{named}the warehouse's store failed or refused a read (the server's log " \
            "has the cause)"
    return None


def cluster_of(request: Request) -> str | None:
    """The cluster a request's path names (`/clusters/{c}/…`, `/api/v1/clusters/{c}/…`)."""
    parts = request.url.path.removeprefix(API).split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "clusters" and parts[2] else None


def problem_response(status: int, title: str, detail: str) -> JSONResponse:
    return JSONResponse(Problem(title=title, status=status, detail=detail).model_dump(), status_code=status,
                        media_type=PROBLEM)


# every refusal a route may answer, so the OpenAPI schema lists it
REFUSALS: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "description": title, "content": {PROBLEM: {}}}
    for status, title in ((400, "Bad request"), (401, "Token missing or wrong"), (404, "Not in the history"),
                          (409, "Warehouse refused"), (422, "Invalid parameter"), (502, "Store unavailable"))
}

MAX_PAGE = 1_000_000
# parsed by `kraftlake.inputs` (pydantic alone takes `1_0` as 10); the bounds stay declared for the schema
Page = Annotated[int, Query(ge=1, le=MAX_PAGE, description="page number, from 1"),
                 BeforeValidator(partial(inputs.page_number, "page", high=MAX_PAGE))]
Size = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE, description="rows per page"),
                 BeforeValidator(partial(inputs.page_number, "size", high=MAX_PAGE_SIZE))]
At = Annotated[str | None, Query(max_length=64, description="an offset, or an ISO-8601 time (UTC if no zone); "
                                                            "default: the last published image")]
Search = Annotated[str | None, Query(max_length=200, description="keep rows containing this text")]
ClusterName = Annotated[str, PathParam(max_length=64, description="the cluster's name (`kraftlake ui --name`, or "
                                                                   "the fleet file's)")]
WindowStart = Annotated[str | None, Query(alias="from", max_length=64, description="ISO-8601 time")]
WindowEnd = Annotated[str | None, Query(max_length=64, description="ISO-8601 time")]
Labels = Annotated[list[str], Query(max_length=200, description="keep the clusters with this label: KEY=VALUE "
                                                                "(repeatable: all must hold)")]
TableName = Annotated[str, PathParam(max_length=64, description="a sub-image table: brokers, partitions, …")]
Sort = Annotated[str | None, Query(max_length=64, description="order by this column")]


def api_router(settings: Settings) -> APIRouter:
    """The JSON API; the pages read through the same `Explorer`."""
    served = settings.clusters
    router = APIRouter(prefix=API, responses=REFUSALS)
    known = served.explorer

    @router.get("/clusters", response_model=list[Cluster], tags=["clusters"])
    def clusters() -> list[Cluster]:
        return [Cluster(name=m.name, labels=m.labels) for m in served.members()]

    @router.get("/fleet", response_model=FleetOut, tags=["fleet"])
    def fleet(from_: WindowStart = None, to: WindowEnd = None,
              label: Labels = []) -> FleetOut:  # noqa: B006 (FastAPI copies the default)
        """Every cluster's health on one time axis: offline and under-min-ISR partitions, fenced brokers and
        Raft epochs, each the cluster's own timeline series in the same window."""
        return fleet_out(served, from_, to, parse_labels(label))

    @router.get("/clusters/{cluster}", response_model=HistoryRange, tags=["clusters"])
    def history_range(cluster: ClusterName) -> HistoryRange:
        ex = known(cluster)
        answered = ex.reader.known()
        first, last = answered.span()
        return HistoryRange(cluster=ex.cluster, first_offset=first, last_offset=last,
                            first_time=iso_time(answered.first_time_ms),
                            last_time=iso_time(answered.last_time_ms),
                            gaps=[Gap(first=gap.first, last=gap.last) for gap in answered.gaps],
                            tables=list(TABLES))

    @router.get("/clusters/{cluster}/offset", response_model=Moment, tags=["clusters"])
    def offset(cluster: ClusterName, at: At = None) -> Moment:
        """The offset a moment names (a time: the reader's time → offset rule)."""
        ex = known(cluster)
        found = ex.offset(at)
        return Moment(offset=found, time=iso_time(ex.time_of(found)))

    @router.get("/clusters/{cluster}/timeline", response_model=TimelineOut, tags=["timeline"])
    def timeline(cluster: ClusterName,
                 from_: WindowStart = None,
                 to: WindowEnd = None,
                 focus_table: Annotated[str | None, Query(max_length=64)] = None,
                 focus_key: Annotated[str | None, Query(max_length=200)] = None) -> TimelineOut:
        return timeline_out(known(cluster), from_, to, focus_table, focus_key)

    @router.get("/clusters/{cluster}/image", response_model=ImageSummary, tags=["image"])
    def image(cluster: ClusterName, at: At = None) -> ImageSummary:
        ex = known(cluster)
        view = ex.image(ex.offset(at))
        p = view.provenance
        return ImageSummary(offset=p.offset, epoch=p.epoch, time=iso_time(p.log_time_ms),
                            rows=view.row_counts(), partitions_flagged=view.flagged(),
                            brokers=broker_states(view.tables["brokers"]))

    @router.get("/clusters/{cluster}/image/{table}", response_model=RowsPage, tags=["image"])
    def table_rows(cluster: ClusterName, table: TableName, at: At = None,
                   q: Search = None, sort: Sort = None, desc: bool = False, page: Page = 1,
                   size: Size = 50) -> RowsPage:
        """A page of one sub-image table at the moment (rows as `kraftlake image --table` prints them)."""
        ex = known(cluster)
        at_offset = ex.offset(at)
        found = ex.table_page(at_offset, table, q, sort, desc, page, size)
        return RowsPage(offset=at_offset, table=table, total=found.total, page=page, size=size, rows=found.rows)

    @router.get("/clusters/{cluster}/topics", response_model=TopicsPage, tags=["image"])
    def topics(cluster: ClusterName, at: At = None, q: Search = None, sort: Sort = None, desc: bool = False,
               page: Page = 1, size: Size = 100) -> TopicsPage:
        """Topics at the moment with their partition counts (under-replicated, under min ISR, offline)."""
        ex = known(cluster)
        at_offset = ex.offset(at)
        found = ex.topics_page(at_offset, q, sort, desc, page, size)
        return TopicsPage(offset=at_offset, total=found.total, page=page, size=size,
                          topics=[TopicSummary(**row) for row in found.rows])

    @router.get("/clusters/{cluster}/topics/{topic}/partitions", response_model=RowsPage, tags=["image"])
    def partitions(cluster: ClusterName, topic: Annotated[str, PathParam(max_length=255)], at: At = None,
                   only: Annotated[str | None, Query(max_length=32, description="under_replicated, "
                                                     "under_min_isr or offline")] = None,
                   page: Page = 1, size: Size = 100) -> RowsPage:
        ex = known(cluster)
        at_offset = ex.offset(at)
        found = ex.partitions_page(at_offset, topic, only, page, size)
        return RowsPage(offset=at_offset, table="partitions", total=found.total, page=page, size=size,
                        rows=found.rows)

    @router.get("/clusters/{cluster}/changes", response_model=ChangesPage, tags=["changes"])
    def changes(cluster: ClusterName,
                from_: Annotated[str, Query(alias="from", max_length=64, description="an offset or a time")],
                to: Annotated[str, Query(max_length=64, description="an offset or a time")],
                table: Annotated[str | None, Query(max_length=64)] = None, q: Search = None,
                page: Page = 1, size: Size = 100) -> ChangesPage:
        """What changed in (from, to], per table, before → after (the `changes` rule)."""
        ex = known(cluster)
        start, end = ex.offset(from_), ex.offset(to)
        counts, found = ex.changes_page(start, end, table, q, page, size)
        shown = table or next((name for name, count in counts.items() if count), None)
        return ChangesPage(from_offset=start, to_offset=end, counts=counts, table=shown, total=found.total,
                           page=page, size=size, changes=found.rows)

    @router.get("/clusters/{cluster}/history/{table}", response_model=HistoryPage, tags=["history"])
    def history(cluster: ClusterName, table: TableName,
                key: Annotated[str, Query(min_length=1, max_length=300, description="as `kraftlake history "
                                          "--key` takes it: 1, orders-3, topic:orders:retention.ms, …")],
                from_: Annotated[str | None, Query(alias="from", max_length=64)] = None,
                to: Annotated[str | None, Query(max_length=64)] = None,
                page: Page = 1, size: Size = 100) -> HistoryPage:
        """Every version of one row (the `history` rule)."""
        ex = known(cluster)
        start = ex.offset(from_) if from_ else None
        end = ex.offset(to) if to else None
        found = ex.history_page(table, key, start, end, page, size)
        return HistoryPage(table=table, key=key, total=found.total, page=page, size=size, versions=found.rows)

    @router.get("/clusters/{cluster}/principals/{principal}", response_model=PrincipalHistory, tags=["history"])
    def principal(cluster: ClusterName, principal: Annotated[str, PathParam(max_length=300, description=(
            "User:alice, or alice"))]) -> PrincipalHistory:
        """Every version of a principal's ACLs, SCRAM credentials and user quotas."""
        return PrincipalHistory(principal=principal, tables=known(cluster).principal_history(principal))

    return router


def broker_states(brokers: pa.Table) -> dict[str, str]:
    """Each broker's state in an image's brokers table, in the timeline's swimlane words."""
    return {str(b["broker_id"]): "fenced" if b["fenced"] else "controlled_shutdown" if b["in_controlled_shutdown"]
            else "registered" for b in brokers.select(["broker_id", "fenced", "in_controlled_shutdown"]).to_pylist()}


def time_range(line: tl.Timeline) -> tuple[int, int]:
    """The first and last time the timeline draws: the known range's (the header's, `/clusters/{c}`'s)."""
    return line.known.first_time_ms, line.known.last_time_ms


def time_window(from_text: str | None, to_text: str | None, first_time: int, last_time: int) -> tuple[int, int]:
    """The window a request names (ISO times), the whole range where it names none."""
    low = inputs.iso_time("from", from_text) if from_text else first_time
    high = inputs.iso_time("to", to_text) if to_text else last_time
    if high < low:
        raise BadRequest(f"the window's end ({to_text}) is before its start ({from_text})")
    return low, high


def points(series: tl.Series, low: int, high: int) -> list[Point]:
    """A series' points in the window, thinned for drawing (`timeline.window`)."""
    return [Point(offset=o, time=t, value=v) for o, t, v in tl.window(series, low, high, BUCKETS)]


def epochs_out(line: tl.Timeline) -> list[Epoch]:
    times = line.clock.times(np.array([o for e in line.epochs for o in e[1:]], dtype=np.int64)).tolist()
    return [Epoch(epoch=e, from_offset=a, to_offset=b, from_time=times[2 * i], to_time=times[2 * i + 1])
            for i, (e, a, b) in enumerate(line.epochs)]


def gap_times(ex: Explorer, line: tl.Timeline) -> list[Gap]:
    spans = [tuple(int(t) for t in line.clock.times(np.array(gap))) for gap in ex.gaps()]
    return [Gap(first=a, last=b) for a, b in spans]


def timeline_out(ex: Explorer, from_text: str | None, to_text: str | None, focus_table: str | None,
                 focus_key: str | None) -> TimelineOut:
    """The timeline in a time window (default: the whole history), thinned for drawing."""
    line = ex.timeline()
    first_time, last_time = time_range(line)
    low, high = time_window(from_text, to_text, first_time, last_time)

    brokers = {str(broker): [_span(line, span) for span in spans] for broker, spans in line.brokers.items()}
    focus: list[Point] = []
    if focus_table and focus_key:
        versions = ex.reader.history(focus_table, focus_key)
        codes = {"insert": 0, "update": 1, "delete": 2}
        focus = [Point(offset=v.offset, time=v.time_ms, value=codes[v.change]) for v in versions]
        if focus_table == "brokers" and focus_key.strip() in brokers:
            brokers = {focus_key.strip(): brokers[focus_key.strip()]}
    events = line.events
    inside = np.flatnonzero((events.times >= low) & (events.times <= high))
    shown = inside[np.linspace(0, len(inside) - 1, EVENTS_SHOWN).astype(int)] if len(inside) > EVENTS_SHOWN \
        else inside
    return TimelineOut(
        first_offset=line.first_offset, last_offset=line.last_offset, first_time=first_time, last_time=last_time,
        from_time=low, to_time=high, gaps=[Gap(first=a, last=b) for a, b in ex.gaps()],
        gap_times=gap_times(ex, line),
        brokers=brokers,
        series={name: points(counts, low, high) for name, counts in partition_series(line).items()},
        fenced_brokers=points(line.fenced_brokers, low, high),
        leaders={str(broker): points(series, low, high) for broker, series in line.leaders.items()},
        epochs=epochs_out(line),
        events=[Event(offset=int(events.offsets[i]), time=int(events.times[i]), table=events.tables[i],
                      key=events.keys[i], change=events.changes[i], before=events.befores[i],
                      after=events.afters[i], text=events.texts[i]) for i in shown],
        events_total=len(inside), focus=focus,
        quiet=[Quiet(from_time=a, to_time=b, length=duration(b - a))
               for a, b in tl.quiet_stretches(line.changes, low, high)],
    )


def partition_series(line: tl.Timeline) -> dict[str, tl.Series]:
    """The timeline's partition counts by their API names."""
    return {"under_replicated": line.under_replicated, "under_min_isr": line.under_min_isr, "offline": line.offline}


def parse_labels(given: list[str]) -> dict[str, str]:
    """`KEY=VALUE` filters (BadRequest: one without `=`)."""
    pairs = [text.partition("=") for text in given]
    if bad := [text for text, (_, sep, _) in zip(given, pairs, strict=True) if not sep]:
        raise BadRequest(f"label {bad[0]!r}: write KEY=VALUE, e.g. env=prod")
    return {key.strip(): value.strip() for key, _, value in pairs}


def fleet_out(served: Clusters, from_text: str | None, to_text: str | None, labels: dict[str, str]) -> FleetOut:
    """The fleet on one axis: the window spans every shown cluster's history unless the request names one;
    each row's series are its own timeline's, cut to that window by the same rule as `timeline_out`."""
    chosen = [m for m in served.members() if all(m.labels.get(k) == v for k, v in labels.items())]
    lines = {m.name: fleet_timeline(served, m) for m in chosen}
    ranges = [time_range(line) for line in lines.values() if isinstance(line, tl.Timeline)]
    window = time_window(from_text, to_text, min((r[0] for r in ranges), default=0),
                         max((r[1] for r in ranges), default=0)) if ranges or (from_text and to_text) else None
    return FleetOut(from_time=window[0] if window else None, to_time=window[1] if window else None,
                    labels=labels, clusters=[fleet_row(m, lines[m.name], window or (0, 0)) for m in chosen])


def fleet_timeline(served: Clusters, member: Member) -> tl.Timeline | tuple[str, str]:
    """The cluster's timeline, or (status, one line) when it has none to draw."""
    try:
        return served.explorer(member.name).timeline()
    except NoHistory as error:
        return "no history yet", str(error)
    except (LakeError, OSError, DeltaError) as error:  # one cluster's store failing leaves the others drawn
        LOG.warning("cluster %s: %s", member.name, error)
        found = problem_for(error, member.name)
        return "unavailable", found[2] if found else f"cluster {member.name}: unavailable (the server's log has why)"


def fleet_row(member: Member, line: tl.Timeline | tuple[str, str], window: tuple[int, int]) -> FleetRow:
    if isinstance(line, tuple):
        return FleetRow(name=member.name, labels=member.labels, status=line[0], detail=line[1])
    low, high = window
    first_time, last_time = time_range(line)
    return FleetRow(
        name=member.name, labels=member.labels, status="ok", first_time=first_time, last_time=last_time,
        gap_times=gap_times(member.explorer, line),
        series={**{name: points(partition_series(line)[name], low, high) for name in FLEET_SERIES},
                "fenced_brokers": points(line.fenced_brokers, low, high)},
        epochs=epochs_out(line),
    )


def _span(line: tl.Timeline, span: tl.Span) -> BrokerSpan:
    start = int(line.clock.times(np.array([span.start]))[0])
    end = None if span.end is None else int(line.clock.times(np.array([span.end]))[0])
    return BrokerSpan(state=span.state, from_offset=span.start, to_offset=span.end, from_time=start, to_time=end)


def create_app(settings: Settings) -> FastAPI:
    """The app over one warehouse. Swagger's page is left out: it loads its script from a CDN."""
    from kraftlake.explorer.pages import page_router

    app = FastAPI(title="kraftlake explorer", version="1", openapi_url=f"{API}/openapi.json", docs_url=None,
                  redoc_url=None, summary="The history of a Kafka cluster's KRaft metadata, read-only.")
    app.include_router(api_router(settings))
    app.include_router(page_router(settings))
    app.mount("/-/static", StaticFiles(directory=STATIC), name="static")

    def is_api(request: Request) -> bool:
        return request.url.path.startswith("/api/")

    async def refused(request: Request, status: int, title: str, detail: str) -> Response:
        if is_api(request):
            return problem_response(status, title, detail)
        from kraftlake.explorer.pages import error_page

        return error_page(request, settings, status, title, detail)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> Response:
        first = error.errors()[0] if error.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(part) for part in first.get("loc", ()) if part not in ("query", "path"))
        context = first.get("ctx")
        ours = context.get("error") if isinstance(context, dict) else None  # `kraftlake.inputs`' own line
        detail = str(ours) if isinstance(ours, inputs.InputError) else f"{where}: {first.get('msg', '')}"
        return await refused(request, 422, "Invalid parameter", one_line(detail))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        return await refused(request, error.status_code, str(error.detail), one_line(
            f"{request.method} {request.url.path}: {error.detail}"))

    async def no_history(request: Request, error: Exception) -> Response:
        """A fleet's cluster with nothing published yet: its pages say so (not an error), its API refuses."""
        if is_api(request):
            return problem_response(NoHistory.status, NoHistory.title, one_line(str(error)))
        from kraftlake.explorer.pages import no_history_page

        return no_history_page(request, settings, one_line(str(error)))

    async def expected(request: Request, error: Exception) -> Response:
        known_problem = problem_for(error, cluster_of(request))
        if known_problem is None:
            LOG.error("%s %s", request.method, request.url.path, exc_info=error)
            return await refused(request, 500, "Internal error", "an internal error (the server's log has it)")
        if not isinstance(error, ExplorerError | inputs.InputError):  # the lake's and the store's name a location
            LOG.info("%s %s: %s", request.method, request.url.path, one_line(str(error)))
        return await refused(request, *known_problem)

    # a store's failures come as OSError or DeltaError
    for kind in (ExplorerError, inputs.InputError, LakeError, OSError, DeltaError):
        app.add_exception_handler(kind, expected)
    app.add_exception_handler(NoHistory, no_history)

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        """The token (when one is set), and headers that keep pages from loading anything but the app's own
        assets and from being framed."""
        if settings.token is not None:
            given = request.query_params.get("token")
            if given is not None and hmac.compare_digest(given.encode(), settings.token.encode()):
                kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                target = request.url.replace_query_params(**dict(kept)) if kept else request.url.remove_query_params(
                    "token")
                redirect = RedirectResponse(str(target), status_code=303)
                redirect.set_cookie(TOKEN_COOKIE, settings.token, httponly=True, samesite="strict")
                return redirect
            scheme, _, credentials = request.headers.get("authorization", "").strip().partition(" ")
            bearer = credentials.strip() if scheme.lower() == "bearer" else ""  # a case-insensitive scheme (RFC 9110)
            cookie = request.cookies.get(TOKEN_COOKIE, "")
            if not any(hmac.compare_digest(c.encode(), settings.token.encode()) for c in (bearer, cookie) if c):
                return problem_response(401, "Token missing or wrong", "this explorer needs its access token: "
                                        "open the link `kraftlake ui` printed, or send 'Authorization: Bearer …'")
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            "frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.allowed_hosts)
    return app
