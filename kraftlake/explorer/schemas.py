"""The API's JSON shapes (and so its OpenAPI schema). Rows, changes and versions are the CLI's `--json` lines
unchanged (`image --table`, `changes`, `history --json`): the same writers produce both, so a script can move
between the two without translating."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Problem(BaseModel):
    """An error (RFC 9457 problem details): `detail` is the CLI's one-line message."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str


class Cluster(BaseModel):
    """A cluster served (its warehouse's location is the server's to know: it is logged, never answered)."""

    name: str
    labels: dict[str, str] = Field(default_factory=dict, description="the fleet file's labels (none for one "
                                                                      "warehouse)")


class Gap(BaseModel):
    """Offsets `first`..`last` the history lacks (Kafka deleted them before they were read)."""

    first: int
    last: int


class HistoryRange(BaseModel):
    """What the warehouse answers (the reader's known range): from its first published image to the last offset
    read, their times (ISO-8601 UTC; a snapshot's: its last contained log time), and the gaps in between."""

    cluster: str
    first_offset: int
    last_offset: int
    first_time: str
    last_time: str
    gaps: list[Gap] = Field(description="offsets the history lacks; drawn as gaps")
    tables: list[str]


class Moment(BaseModel):
    """An offset and the append time of the batch holding it (ISO-8601 UTC, "" when unknown)."""

    offset: int
    time: str


class ImageSummary(BaseModel):
    """The image at a moment: where it comes from, how many rows each table holds, its partitions' health counts
    and its brokers' states: everything the timeline's cursor card states, read from this image (never from the
    timeline's thinned drawing points)."""

    offset: int
    epoch: int
    time: str
    rows: dict[str, int]
    partitions_flagged: dict[str, int] = Field(description="how many partitions are under_replicated, "
                                               "under_min_isr and offline in this image")
    brokers: dict[str, str] = Field(description="each registered broker's state in this image, by id: "
                                    "registered, fenced or controlled_shutdown")


class RowsPage(BaseModel):
    """A page of a table's rows at `offset`, each as `kraftlake image --table` prints it."""

    offset: int
    table: str
    total: int
    page: int
    size: int
    rows: list[dict[str, Any]]


class TopicSummary(BaseModel):
    topic_id: str
    name: str
    partitions: int
    under_replicated: int
    under_min_isr: int
    offline: int


class TopicsPage(BaseModel):
    offset: int
    total: int
    page: int
    size: int
    topics: list[TopicSummary]


class ChangesPage(BaseModel):
    """What changed in (from_offset, to_offset]: per table the count (after the filter), and a page of one
    table's changes, each as `kraftlake changes` prints it."""

    from_offset: int
    to_offset: int
    counts: dict[str, int]
    table: str | None
    total: int
    page: int
    size: int
    changes: list[dict[str, Any]]


class HistoryPage(BaseModel):
    """Every version of one row, each as `kraftlake history --json` prints it."""

    table: str
    key: str
    total: int
    page: int
    size: int
    versions: list[dict[str, Any]]


class PrincipalHistory(BaseModel):
    """Every version of the rows that name a principal, per table (acls, scram_credentials, client_quotas),
    each as `kraftlake history --json` prints it."""

    principal: str
    tables: dict[str, list[dict[str, Any]]]


class Point(BaseModel):
    offset: int
    time: int = Field(description="epoch milliseconds")
    value: int


class BrokerSpan(BaseModel):
    state: str = Field(description="registered, fenced, controlled_shutdown or unregistered")
    from_offset: int
    to_offset: int | None
    from_time: int
    to_time: int | None


class Epoch(BaseModel):
    epoch: int
    from_offset: int
    to_offset: int
    from_time: int
    to_time: int


class Event(BaseModel):
    offset: int
    time: int
    table: str
    key: str = Field(description="the row, as `kraftlake history --key` takes it")
    change: str
    before: dict[str, Any] = Field(description="raw values before, of those that changed (a config's value, an "
                                   "ACL's columns; other tables' events carry none)")
    after: dict[str, Any] = Field(description="raw values after, of those that changed")
    text: str = Field(description="the event in operators' words: `topic orders retention.ms: 1 day → 7 days`, "
                      "`+ TOPIC orders LITERAL READ ALLOW User:alice`")


class Quiet(BaseModel):
    """A stretch in which nothing the timeline draws changes (NoOps only), drawn as a break in the axis."""

    from_time: int
    to_time: int
    length: str = Field(description="how long, in words: `23.9 h`")


class TimelineOut(BaseModel):
    """The history between `from_time` and `to_time` (epoch ms): each series' points inside the window and
    the one before it, thinned to the highest and last point per pixel-sized bucket when there are more.
    `first_offset` … `last_time` are the known range, as `/clusters/{c}` states it (times in epoch ms)."""

    first_offset: int
    last_offset: int
    first_time: int
    last_time: int
    from_time: int
    to_time: int
    gaps: list[Gap]
    gap_times: list[Gap] = Field(description="the gaps' first and last append times (epoch ms)")
    brokers: dict[str, list[BrokerSpan]]
    series: dict[str, list[Point]]
    fenced_brokers: list[Point] = Field(description="how many brokers are fenced (the swimlanes' fenced runs)")
    leaders: dict[str, list[Point]]
    epochs: list[Epoch]
    events: list[Event]
    events_total: int
    quiet: list[Quiet] = Field(description="stretches of the window with no change, longer than a tenth of it "
                               "and a minute: drawn as breaks, so the events around them stay apart")
    focus: list[Point] = Field(description="versions of the focused row (value: 0 insert, 1 update, 2 delete)")


class FleetRow(BaseModel):
    """One cluster of the fleet on the shared axis: its health series, each the cluster's own timeline series
    in the same window (`/clusters/{c}/timeline?from=&to=`), and its Raft epochs (a new one: the controller
    changed). Without history (`status` not "ok") the series are empty and `detail` says why."""

    name: str
    labels: dict[str, str]
    status: str = Field(description="ok, no history yet, or unavailable (the store failed)")
    detail: str = ""
    first_time: int | None = None
    last_time: int | None = None
    gap_times: list[Gap] = Field(default_factory=list)
    series: dict[str, list[Point]] = Field(default_factory=dict, description=(
        "offline, under_min_isr (the timeline's `series`) and fenced_brokers"))
    epochs: list[Epoch] = Field(default_factory=list)


class FleetOut(BaseModel):
    """Every cluster of the fleet (those with all the `label` filters), on one time axis from `from_time` to
    `to_time` (epoch ms; default: the earliest history to the latest)."""

    from_time: int | None
    to_time: int | None
    labels: dict[str, str] = Field(description="the label filters applied")
    clusters: list[FleetRow]
