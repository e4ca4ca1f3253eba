"""The explorer's pages: server-rendered HTML (Jinja2, autoescaped) over the same `Explorer` reads as the API.

Every view's state is in its URL's query string (the moment `at`, filters, sort, page), so a pasted link
opens the same view; every link comes from `Links`, which carries the moment along. Only the timeline has
a script (`static/timeline.js`, drawn from `/api/v1/.../timeline`); every other page works without one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
import pyarrow.compute as pc
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from kraftlake.explorer.errors import NotFound
from kraftlake.explorer.service import Explorer
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.history import iso_time

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


def columns_of(table: str) -> list[str]:
    return list(TABLES[table].schema.names)


TEMPLATES.globals.update(cell=cell, history_key=history_key, tab_titles=TAB_TITLES, tabs=TABS,
                         iso_time=iso_time, columns_of=columns_of)


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(TEMPLATES.get_template(name).render(**context), status_code=status)


def error_page(request: Request, settings: Any, status: int, title: str, detail: str) -> Response:
    explorer: Explorer = settings.explorer
    return render("error.html.j2", status=status, title=title, detail=detail, links=Links(explorer.cluster),
                  cluster=explorer.cluster, moment=None, at_text=request.query_params.get("at", ""), page_name="",
                  query={})


def page_router(settings: Any) -> APIRouter:
    explorer: Explorer = settings.explorer
    router = APIRouter(include_in_schema=False)

    def known(cluster: str) -> None:
        if cluster != explorer.cluster:
            raise NotFound(f"no cluster {cluster!r}; clusters: {explorer.cluster}")

    def common(request: Request, page_name: str, offset: int | None = None) -> dict[str, Any]:
        """What every page shows: the cluster, the moment bar, the navigation (links keep the moment)."""
        at_text = request.query_params.get("at")
        at = str(offset) if offset is not None else at_text
        first, last = explorer.reader.published_range()
        moment = None
        if offset is not None:
            moment = {"offset": offset, "time": iso_time(explorer.time_of(offset))}
        return {"cluster": explorer.cluster, "links": Links(explorer.cluster, at), "moment": moment,
                "at_text": at_text or "", "first_offset": first, "last_offset": last, "page_name": page_name,
                "query": dict(request.query_params)}

    @router.get("/")
    def home() -> Response:
        return RedirectResponse(Links(explorer.cluster).timeline(), status_code=307)

    @router.get("/clusters/{cluster}")
    def timeline(request: Request, cluster: str) -> Response:
        known(cluster)
        at = request.query_params.get("at")
        offset = explorer.offset(at)
        return render("timeline.html.j2", **common(request, "timeline", offset),
                      window_from=request.query_params.get("from", ""), window_to=request.query_params.get("to", ""))

    @router.get("/clusters/{cluster}/image")
    def image(request: Request, cluster: str, q: str | None = None, sort: str | None = None, desc: bool = False,
              page: int = 1) -> Response:
        known(cluster)
        offset = explorer.offset(request.query_params.get("at"))
        view = explorer.image(offset)
        topics = explorer.topics_page(offset, q, sort, desc, page, 100)
        small = {name: explorer.table_page(offset, name, None, None, False, 1, 50)
                 for name in ("brokers", "controllers", "voters", "features", "kraft_version")}
        totals = {name: int(pc.sum(view.flags[name]).as_py() or 0) for name in view.flags.column_names}
        fenced = int(pc.sum(view.tables["brokers"]["fenced"]).as_py() or 0)
        return render("image.html.j2", **common(request, "image", offset), view=view, topics=topics, small=small,
                      totals=totals, fenced=fenced,
                      q=q or "", sort=sort or "", desc=desc, page=page,
                      counts={name: t.num_rows for name, t in view.tables.items()})

    @router.get("/clusters/{cluster}/image/{table}")
    def table(request: Request, cluster: str, table: str, q: str | None = None, sort: str | None = None,
              desc: bool = False, page: int = 1, size: int = 100) -> Response:
        known(cluster)
        if table == "topics":
            return RedirectResponse(Links(explorer.cluster, request.query_params.get("at")).image(), status_code=307)
        offset = explorer.offset(request.query_params.get("at"))
        found = explorer.table_page(offset, table, q, sort, desc, page, size)
        return render("table.html.j2", **common(request, table, offset), table=table, found=found,
                      rows=found.rows, q=q or "",
                      sort=sort or "", desc=desc, page=page, size=size,
                      columns=TABLES[table].schema.names)

    @router.get("/clusters/{cluster}/topics/{topic}")
    def topic(request: Request, cluster: str, topic: str, only: str | None = None, page: int = 1,
              size: int = 100) -> Response:
        known(cluster)
        offset = explorer.offset(request.query_params.get("at"))
        summary = explorer.topic_ids(offset, topic).to_pylist()[0]
        found = explorer.partitions_page(offset, topic, only, page, size)
        return render("topic.html.j2", **common(request, "topics", offset), topic=summary, found=found,
                      rows=found.rows,
                      only=only or "", page=page, size=size, columns=TABLES["partitions"].schema.names)

    @router.get("/clusters/{cluster}/changes")
    def changes(request: Request, cluster: str, table: str | None = None, q: str | None = None,
                page: int = 1) -> Response:
        known(cluster)
        params = request.query_params
        last = explorer.reader.published_range()[1]
        end = explorer.offset(params.get("to") or params.get("at") or str(last))
        start = explorer.offset(params.get("from")) if params.get("from") else max(end - 1, 0)
        counts, found = explorer.changes_page(start, end, table, q, page, 100)
        shown = table or next((name for name, count in counts.items() if count), None)
        context = common(request, "changes", end)
        return render("changes.html.j2", **context, start=start, end=end, counts=counts, shown=shown,
                      found=found, q=q or "", page=page,
                      start_time=iso_time(explorer.time_of(start)))

    @router.get("/clusters/{cluster}/history/{table}")
    def history(request: Request, cluster: str, table: str, key: str = "", page: int = 1) -> Response:
        known(cluster)
        if table not in TABLES:
            raise NotFound(f"no table {table!r}; tables: {', '.join(TABLES)}")
        at = request.query_params.get("at")
        offset = explorer.offset(at) if at else None
        found = explorer.history_page(table, key, None, None, page, 100) if key else None
        return render("history.html.j2", **common(request, "history", offset), table=table, key=key,
                      found=found, page=page, window_from="", window_to="")

    @router.get("/clusters/{cluster}/principals/{principal}")
    def principal(request: Request, cluster: str, principal: str) -> Response:
        """A principal over time: its ACLs, SCRAM credentials and quotas."""
        known(cluster)
        at = request.query_params.get("at")
        offset = explorer.offset(at) if at else None
        return render("principal.html.j2", **common(request, "history", offset), principal=principal,
                      tables=explorer.principal_history(principal))

    @router.get("/clusters/{cluster}/brokers/{broker}")
    def broker(cluster: str, broker: str, request: Request) -> Response:
        """A broker's page: its versions and the timeline focused on it."""
        known(cluster)
        return RedirectResponse(Links(cluster, request.query_params.get("at")).history("brokers", broker),
                                status_code=307)

    return router
