"""The explorer's pages: server-rendered HTML (Jinja2, autoescaped) over the same `Explorer` reads as the API.

Every view's state is in its URL's query string (the moment `at`, filters, sort, page), so a pasted link
opens the same view; every link comes from `Links`, which carries the moment along. Only the timeline has
a script (`static/timeline.js`, drawn from `/api/v1/.../timeline`), and the fleet page (`static/fleet.js`, drawn
from `/api/v1/fleet`); every other page works without one. Serving a fleet, every page's header has a cluster
picker whose links open the other cluster's same page at the same moment, as a time (offsets are per cluster).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
import numpy as np
import pyarrow.compute as pc
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup, escape

from kraftlake import inputs
from kraftlake.explorer.app import Page, Size, cluster_of
from kraftlake.explorer.clusters import Clusters
from kraftlake.explorer.errors import NotFound
from kraftlake.explorer.service import Explorer
from kraftlake.explorer.words import CONFIG_ORIGIN, acl, plural, when, when_iso, word
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.history import iso_time
from kraftlake.replay.visibility import time_span

TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True,
    undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
)
# the tables of the "cluster at the cursor" tabs, in the order an operator looks
TABS = ("brokers", "controllers", "voters", "features", "configs", "acls", "client_quotas", "scram_credentials",
        "delegation_tokens", "producer_ids", "kraft_version")
TAB_TITLES = {"brokers": "Brokers", "controllers": "Controllers", "voters": "Voters", "features": "Features",
              "configs": "Configs", "acls": "ACLs", "client_quotas": "Quotas", "scram_credentials": "SCRAM users",
              "delegation_tokens": "Delegation tokens", "producer_ids": "Producer ids",
              "kraft_version": "KRaft version", "topics": "Topics", "partitions": "Partitions"}


@dataclass(frozen=True)
class Links:
    """Every page's URL, from one place: path segments percent-encoded, the moment carried along."""

    cluster: str
    at: str | None = None

    def _url(self, path: str, **query: Any) -> str:
        kept = {k.rstrip("_"): v for k, v in query.items() if v not in (None, "", False)}
        return f"/clusters/{quote(self.cluster, safe='')}{path}" + (f"?{urlencode(kept)}" if kept else "")

    def _moment(self, at: Any) -> Any:
        return self.at if at is None else at

    def timeline(self, at: Any = None, **query: Any) -> str:
        return self._url("", at=self._moment(at), **query)

    def image(self, at: Any = None, **query: Any) -> str:
        return self._url("/image", at=self._moment(at), **query)

    def table(self, table: str, at: Any = None, **query: Any) -> str:
        return self._url(f"/image/{quote(table, safe='')}", at=self._moment(at), **query)

    def topic(self, name: str, at: Any = None, **query: Any) -> str:
        return self._url(f"/topics/{quote(name, safe='')}", at=self._moment(at), **query)

    def changes(self, start: Any, end: Any, **query: Any) -> str:
        return self._url("/changes", from_=start, to=end, **query)

    def principal(self, principal: str, at: Any = None) -> str:
        return self._url(f"/principals/{quote(principal, safe='')}", at=self._moment(at))

    def history(self, table: str, key: str, at: Any = None, **query: Any) -> str:
        return self._url(f"/history/{quote(table, safe='')}", key=key, at=self._moment(at), **query)

    def broker(self, broker: Any, at: Any = None, **query: Any) -> str:
        return self._url(f"/brokers/{quote(str(broker), safe='')}", at=self._moment(at), **query)


def history_key(table: str, row: dict[str, Any]) -> str:
    """The row's key as `kraftlake history --key` takes it."""
    match table:
        case "partitions":  # a change's key names the topic by id, which the history key takes too
            return f"{row.get('topic_name') or row['topic_id']}-{row['partition_id']}"
        case "topics":
            return str(row.get("name") or row["topic_id"])
        case "configs":
            return f"{row['resource_type']}:{row['resource_name']}:{row['name']}"
        case "scram_credentials":
            return f"{row['user']}:{row['mechanism']}"
    return str(row[TABLES[table].key[0]])


def cell(value: Any) -> str:
    """A value as a table cell shows it: lists comma-separated, structs as compact JSON, null as ∅."""
    if value is None:
        return "∅"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(cell(v) if not isinstance(v, dict) else json.dumps(v, sort_keys=True) for v in value) \
            or "—"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def show(table: str, column: str, value: Any, row: dict[str, Any] | None = None) -> Markup:
    """A cell in the operator's words (`words.word`), the raw value on hover; else the raw value."""
    words = word(table, column, value, row)
    raw = cell(value)
    if words is None or words == raw:
        return escape(raw)
    return Markup('<span class="named" title="{}">{}</span>').format(raw, words)


def columns_of(table: str) -> list[str]:
    return list(TABLES[table].schema.names)


TEMPLATES.filters["combine"] = lambda first, second: {**first, **second}
TEMPLATES.globals.update(cell=cell, show=show, history_key=history_key, tab_titles=TAB_TITLES, tabs=TABS,
                         iso_time=iso_time, columns_of=columns_of, plural=plural, when=when, when_iso=when_iso,
                         acl=acl, between=time_span)


# what a topic's and a broker's partition lists show (the topic's id and name are the page's own)
TOPIC_COLUMNS = ("partition_id", "leader", "replicas", "isr", "elr", "last_known_elr", "adding_replicas",
                 "removing_replicas", "leader_recovery_state", "leader_epoch", "partition_epoch", "directories")
BROKER_PARTITION_COLUMNS = ("topic_name", "partition_id", "leader", "replicas", "isr", "leader_epoch")


def incarnations(explorer: Explorer, name: str) -> list[dict[str, Any]]:
    """Each topic id that held `name`, with the offsets it was created and deleted at (a name reused by a
    topic re-created: more than one)."""
    found: dict[str, dict[str, Any]] = {}
    for version in explorer.reader.history("topics", name):
        entry = found.setdefault(version.key["topic_id"], {"topic_id": version.key["topic_id"], "created": None,
                                                            "deleted": None})
        if version.change == "insert":
            entry["created"] = {"offset": version.offset, "time": version.time_ms}
        elif version.change == "delete":
            entry["deleted"] = {"offset": version.offset, "time": version.time_ms}
    return list(found.values())


def episodes(explorer: Explorer, broker: int) -> list[dict[str, Any]]:
    """The broker's fenced and controlled-shutdown runs, from the timeline's swimlane (an open one: to now)."""
    line = explorer.timeline()
    runs = [span for span in line.brokers.get(broker, []) if span.state in ("fenced", "controlled_shutdown")]
    ends = [span.start if span.end is None else span.end for span in runs]
    times = line.clock.times(np.array([o for span, end in zip(runs, ends, strict=True) for o in (span.start, end)],
                                      dtype=np.int64)).tolist()
    return [{"state": span.state, "start": span.start, "end": span.end, "start_time": int(times[2 * i]),
             "end_time": None if span.end is None else int(times[2 * i + 1])} for i, span in enumerate(runs)]


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(TEMPLATES.get_template(name).render(**context), status_code=status)


def same_page(links: Links, page_name: str) -> str:
    """The page a picker link opens in another cluster: the same view where every cluster has it (the timeline,
    the image, a table); from a topic, the image (that topic may not exist there); from a key's or a diff's
    page, the timeline."""
    if page_name in ("image", "topics"):
        return links.image()
    return links.table(page_name) if page_name in TABS else links.timeline()


def frame(request: Request, served: Clusters, cluster: str | None, page_name: str,
          moment_time: str | None) -> dict[str, Any]:
    """What every page's header shows: the cluster, its links, and serving a fleet, the cluster picker (each
    cluster's same page at `moment_time`, or at the request's moment when that is a time)."""
    at_text = request.query_params.get("at") or ""
    at_time = moment_time or (at_text if at_text and is_time(at_text) else None)
    picker = [{"name": m.name, "url": same_page(Links(m.name, at_time), page_name), "current": m.name == cluster}
              for m in served.members()] if served.is_fleet else []
    return {"cluster": cluster, "links": Links(cluster, at_text or None) if cluster else None, "moment": None,
            "at_text": at_text, "page_name": page_name, "query": dict(request.query_params), "picker": picker,
            "fleet": served.is_fleet}


def is_time(text: str) -> bool:
    """Whether a moment is written as a time (which another cluster's pages can take; an offset is per cluster)."""
    try:
        return not inputs.moment("at", text).is_offset
    except inputs.InputError:
        return False


def error_page(request: Request, settings: Any, status: int, title: str, detail: str) -> Response:
    served: Clusters = settings.clusters
    names = [m.name for m in served.members()]
    cluster = cluster_of(request) if served.is_fleet else names[0]
    context = frame(request, served, cluster if cluster in names else None, "", None)
    return render("error.html.j2", status=status, title=title, detail=detail, **context)


def no_history_page(request: Request, settings: Any, detail: str) -> Response:
    """A fleet's cluster whose warehouse has published nothing yet: a page that says so, not an error (no views,
    no moment: there is nothing to show at any)."""
    context = frame(request, settings.clusters, cluster_of(request), "", None)
    return render("no_history.html.j2", detail=detail, **{**context, "links": None})


def label_filters(request: Request) -> dict[str, str]:
    """The fleet page's label filters: every query parameter but the window's (`?env=prod&region=eu`)."""
    return {k: v for k, v in request.query_params.items() if k not in ("from", "to")}


def page_router(settings: Any) -> APIRouter:
    served: Clusters = settings.clusters
    router = APIRouter(include_in_schema=False)

    def common(request: Request, explorer: Explorer, page_name: str, offset: int | None = None) -> dict[str, Any]:
        """What every page of a cluster shows: the cluster, the moment bar, the navigation (links keep the
        moment), the picker (at the moment's time)."""
        at_text = request.query_params.get("at")
        at = str(offset) if offset is not None else at_text
        time = None if offset is None else iso_time(explorer.time_of(offset))
        moment = None if offset is None else {"offset": offset, "time": time}
        return {**frame(request, served, explorer.cluster, page_name, time),
                "links": Links(explorer.cluster, at), "moment": moment, "known": explorer.reader.known()}

    @router.get("/")
    def home(request: Request) -> Response:
        if served.is_fleet:
            return fleet(request)
        return RedirectResponse(Links(served.members()[0].name).timeline(), status_code=307)

    @router.get("/fleet")
    def fleet(request: Request) -> Response:
        """Every cluster's health on one time axis (`fleet.js` draws it from `/api/v1/fleet`)."""
        from kraftlake.explorer.app import API, fleet_out

        filters = label_filters(request)
        params = request.query_params
        found = fleet_out(served, params.get("from"), params.get("to"), filters)
        values: dict[str, set[str]] = {}
        for member in served.members():
            for key, value in member.labels.items():
                values.setdefault(key, set()).add(value)
        window = [(k, params[k]) for k in ("from", "to") if params.get(k)]
        api = f"{API}/fleet?" + urlencode([*window, *(("label", f"{k}={v}") for k, v in filters.items())])
        return render("fleet.html.j2", **frame(request, served, None, "fleet", None), rows=found.clusters,
                      api=api, filters=filters, label_values={k: sorted(v) for k, v in sorted(values.items())},
                      filter_url=lambda key, value: "/fleet?" + urlencode(
                          {**dict(window), **{k: v for k, v in filters.items() if k != key},
                           **({key: value} if value else {})}),
                      problem=served.problem)

    @router.get("/clusters/{cluster}")
    def timeline(request: Request, cluster: str) -> Response:
        explorer = served.explorer(cluster)
        at = request.query_params.get("at")
        offset = explorer.offset(at)
        return render("timeline.html.j2", **common(request, explorer, "timeline", offset),
                      window_from=request.query_params.get("from", ""), window_to=request.query_params.get("to", ""))

    @router.get("/clusters/{cluster}/image")
    def image(request: Request, cluster: str, q: str | None = None, sort: str | None = None, desc: bool = False,
              page: Page = 1) -> Response:
        explorer = served.explorer(cluster)
        offset = explorer.offset(request.query_params.get("at"))
        view = explorer.image(offset)
        topics = explorer.topics_page(offset, q, sort, desc, page, 100)
        small = {name: explorer.table_page(offset, name, None, None, False, 1, 50)
                 for name in ("brokers", "controllers", "voters", "features", "kraft_version")}
        totals = {name: int(pc.sum(view.flags[name]).as_py() or 0) for name in view.flags.column_names}
        fenced = int(pc.sum(view.tables["brokers"]["fenced"]).as_py() or 0)
        return render("image.html.j2", **common(request, explorer, "image", offset), view=view, topics=topics,
                      small=small, totals=totals, fenced=fenced,
                      q=q or "", sort=sort or "", desc=desc, page=page,
                      counts=view.row_counts())

    @router.get("/clusters/{cluster}/image/{table}")
    def table(request: Request, cluster: str, table: str, q: str | None = None, sort: str | None = None,
              desc: bool = False, page: Page = 1, size: Size = 100) -> Response:
        explorer = served.explorer(cluster)
        if table == "topics":
            return RedirectResponse(Links(explorer.cluster, request.query_params.get("at")).image(), status_code=307)
        offset = explorer.offset(request.query_params.get("at"))
        found = explorer.table_page(offset, table, q, sort, desc, page, size)
        return render("table.html.j2", **common(request, explorer, table, offset), table=table, found=found,
                      rows=found.rows, q=q or "",
                      sort=sort or "", desc=desc, page=page, size=size,
                      columns=[*TABLES[table].schema.names, *(CONFIG_ORIGIN if table == "configs" else ())],
                      unsorted=CONFIG_ORIGIN)

    @router.get("/clusters/{cluster}/topics/{topic}")
    def topic(request: Request, cluster: str, topic: str, only: str | None = None, page: Page = 1,
              size: Size = 100) -> Response:
        explorer = served.explorer(cluster)
        offset = explorer.offset(request.query_params.get("at"))
        summary = explorer.topic_ids(offset, topic).to_pylist()[0]
        found = explorer.partitions_page(offset, topic, only, page, size)
        view = explorer.image(offset)
        at_rows = view.partition_rows(summary["topic_id"])
        flags = {name: set(np.flatnonzero(view.flags[name].take(at_rows).to_numpy(zero_copy_only=False)).tolist())
                 for name in ("under_min_isr", "offline")}
        partition_ids = view.tables["partitions"]["partition_id"].take(at_rows).to_pylist()
        flagged = {name: {partition_ids[i] for i in rows} for name, rows in flags.items()}
        return render("topic.html.j2", **common(request, explorer, "topics", offset), topic=summary, found=found,
                      rows=found.rows, only=only or "", page=page, size=size, columns=TOPIC_COLUMNS,
                      flagged=flagged, configs=explorer.configs_of(offset, "topic", summary["name"]),
                      incarnations=incarnations(explorer, summary["name"]))

    @router.get("/clusters/{cluster}/changes")
    def changes(request: Request, cluster: str, table: str | None = None, q: str | None = None,
                page: Page = 1) -> Response:
        explorer = served.explorer(cluster)
        params = request.query_params
        last = explorer.reader.published_range()[1]
        end = explorer.offset(params.get("to") or params.get("at") or str(last))
        start = explorer.offset(params.get("from")) if params.get("from") else max(end - 1, 0)
        counts, found = explorer.changes_page(start, end, table, q, page, 100)
        shown = table or next((name for name, count in counts.items() if count), None)
        context = common(request, explorer, "changes", end)
        return render("changes.html.j2", **context, start=start, end=end, counts=counts, shown=shown,
                      found=found, q=q or "", page=page,
                      start_time=iso_time(explorer.time_of(start)))

    @router.get("/clusters/{cluster}/history/{table}")
    def history(request: Request, cluster: str, table: str, key: str = "", page: Page = 1) -> Response:
        explorer = served.explorer(cluster)
        if table not in TABLES:
            raise NotFound(f"no table {table!r}; tables: {', '.join(TABLES)}")
        at = request.query_params.get("at")
        offset = explorer.offset(at) if at else None
        found = explorer.history_page(table, key, None, None, page, 100) if key else None
        return render("history.html.j2", **common(request, explorer, "history", offset), table=table, key=key,
                      found=found, page=page, window_from="", window_to="")

    @router.get("/clusters/{cluster}/principals/{principal}")
    def principal(request: Request, cluster: str, principal: str) -> Response:
        """A principal over time: its ACLs, SCRAM credentials and quotas."""
        explorer = served.explorer(cluster)
        at = request.query_params.get("at")
        offset = explorer.offset(at) if at else None
        return render("principal.html.j2", **common(request, explorer, "history", offset), principal=principal,
                      tables=explorer.principal_history(principal))

    @router.get("/clusters/{cluster}/brokers/{broker}")
    def broker(request: Request, cluster: str, broker: str, role: str = "leads", page: Page = 1) -> Response:
        """A broker at the cursor as an operator looks at it: its state, endpoints, rack and directories, the
        partitions it hosts and leads, its fenced and controlled-shutdown episodes, its versions, and the
        timeline focused on it."""
        explorer = served.explorer(cluster)
        broker_id = inputs.integer("broker", broker, -(1 << 31), (1 << 31) - 1, "a broker id")
        offset = explorer.offset(request.query_params.get("at"))
        registered = explorer.image(offset).tables["brokers"]
        rows = explorer.table_page(offset, "brokers", None, None, False, 1, 500).rows
        row = next((r for r in rows if r["broker_id"] == broker_id), None)
        hosted, led, found = explorer.broker_partitions(offset, broker_id, role, page, 100)
        versions = explorer.history_page("brokers", str(broker_id), None, None, 1, 500)
        if row is None and not versions.total:
            raise NotFound(f"no broker {broker_id} in the history (brokers at offset {offset}: "
                           f"{', '.join(map(str, sorted(registered['broker_id'].to_pylist()))) or 'none'})")
        return render("broker.html.j2", **common(request, explorer, "brokers", offset), broker_id=broker_id,
                      row=row, hosted=hosted, led=led, found=found, role=role, page=page, versions=versions,
                      episodes=episodes(explorer, broker_id), columns=BROKER_PARTITION_COLUMNS,
                      configs=explorer.configs_of(offset, "broker", str(broker_id)),
                      focus_table="brokers", focus_key=str(broker_id), window_from="", window_to="")

    return router
