"""Reports on a warehouse: `kraftlake report`, one self-contained HTML page (plotly's JS inline, no network
when viewed), and `text_report`, the short text `make run` prints.

The figures come from the summary views (Spark SQL); only their small results are collected to draw.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from kraftlake.analytics.views import register_views
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import history_name

STATE_COLORS = {"registered": "#2ca02c", "fenced": "#d62728", "controlled_shutdown": "#ff7f0e",
                "unregistered": "#7f7f7f"}
CHART_IDS = ("brokers", "under_replicated", "under_min_isr", "offline_partitions", "leaders", "raft_epochs",
             "events_chart")


@dataclass(frozen=True)
class Chart:
    div_id: str
    title: str
    figure: go.Figure
    note: str = ""

    def html(self, x_range: tuple[Any, Any]) -> str:
        """The figure's div, on the page's shared time axis (so charts line up one above the other)."""
        self.figure.update_layout(height=320, margin={"l": 60, "r": 20, "t": 20, "b": 40}, template="plotly_white",
                                  xaxis={"type": "date", "range": list(x_range)},
                                  legend={"orientation": "h", "yanchor": "bottom", "y": 1.02})
        return self.figure.to_html(full_html=False, include_plotlyjs=False, div_id=self.div_id)


def write_report(
    spark: Any, reader: WarehouseReader, out: Path, from_offset: int | None = None, to_offset: int | None = None
) -> Path:
    """Write the page for offsets [from_offset, to_offset] (default: the range the warehouse answers,
    `WarehouseReader.known`, as the explorer states it); the summary views must be registered."""
    first, last = reader.known().span()
    low, high = first if from_offset is None else from_offset, last if to_offset is None else to_offset
    span = spark.sql(f"SELECT min(base_offset) AS first, max(last_offset) AS last, "
                     f"timestamp_millis(min(append_time_ms)) AS t0, timestamp_millis(max(append_time_ms)) AS t1 "
                     f"FROM batches WHERE last_offset >= {low} AND base_offset <= {high}").first()
    end_time = span["t1"]
    x_range = (span["t0"], end_time)
    gaps = _gaps(spark, low, high)
    breaks = [gap["break_time"] for gap in gaps]
    charts = [
        _swimlane(_rows(spark, f"SELECT * FROM broker_intervals WHERE start_offset <= {high} "
                               f"AND (end_offset IS NULL OR end_offset >= {low}) ORDER BY broker_id, start_offset"),
                  end_time),
        *(_step(name, title, _rows(spark, _window(name, column, low, high)), column, x_range, breaks)
          for name, title, column in (
              ("under_replicated", "Under-replicated partitions", "under_replicated"),
              ("under_min_isr", "Partitions under min.insync.replicas", "under_min_isr"),
              ("offline_partitions", "Offline partitions (no leader)", "offline"))),
        _leaders(_rows(spark, f"SELECT * FROM leaders_per_broker WHERE offset <= {high} ORDER BY broker_id, offset"),
                 end_time, breaks),
        _epochs(_rows(spark, f"SELECT * FROM raft_epochs WHERE offset <= {high} AND last_offset >= {low} "
                             "ORDER BY epoch"), end_time),
    ]
    events = _rows(spark, f"SELECT * FROM events WHERE offset BETWEEN {low} AND {high} ORDER BY offset, kind, key")
    charts.append(_event_markers(events))
    if gaps:
        charts = [replace(chart, note=" ".join(filter(None, [chart.note, *(_gap_note(gap) for gap in gaps)])))
                  for chart in charts]
    page = _template().render(
        warehouse=reader.uri, plotly_js=get_plotlyjs(), events=events,
        charts=[(chart, chart.html(x_range)) for chart in charts],
        first_offset=low, last_offset=high, first_time=span["t0"], last_time=end_time,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out.resolve()


def _window(view: str, column: str, low: int, high: int) -> str:
    """The view's steps inside [low, high], starting with the value in force at `low`."""
    return (f"SELECT offset, time, {column} FROM {view} WHERE offset BETWEEN {low} AND {high} UNION ALL "
            f"(SELECT offset, time, {column} FROM {view} WHERE offset < {low} ORDER BY offset DESC LIMIT 1) "
            "ORDER BY offset")


def _gaps(spark: Any, low: int, high: int) -> list[dict[str, Any]]:
    """The recorded gaps in [low, high], each with the time the charts break at: between the last batch read
    before it and the snapshot that bridged it (nothing is known in between, so no line is drawn there)."""
    return _rows(spark, f"""
SELECT g.first_offset, g.last_offset, g.snapshot_end_offset - 1 AS snapshot_offset,
       timestamp_millis(CAST((coalesce(b.append_time_ms, i.log_time_ms) + i.log_time_ms) / 2 AS BIGINT)) AS break_time
FROM gaps g JOIN images i ON i.offset = g.snapshot_end_offset - 1
LEFT JOIN batches b ON b.last_offset = g.first_offset - 1
WHERE g.last_offset >= {low} AND g.first_offset <= {high} ORDER BY g.first_offset""")


def _gap_note(gap: dict[str, Any]) -> str:
    return (f"Gap: offsets {gap['first_offset']}..{gap['last_offset']} were deleted by Kafka before they were read "
            f"(the line breaks there; the snapshot at offset {gap['snapshot_offset']} resumes it).")


def _broken(times: list[Any], values: list[Any], breaks: list[Any]) -> tuple[list[Any], list[Any]]:
    """The points with a None at each break inside their span: Plotly draws no line through it."""
    points = sorted([*zip(times, values, strict=True),
                     *((moment, None) for moment in breaks if times and times[0] < moment < times[-1])],
                    key=lambda point: point[0])
    return [moment for moment, _ in points], [value for _, value in points]


def _rows(spark: Any, sql: str) -> list[dict[str, Any]]:
    return [row.asDict() for row in spark.sql(sql).collect()]


def _swimlane(intervals: list[dict[str, Any]], end_time: Any) -> Chart:
    figure = go.Figure()
    for state, color in STATE_COLORS.items():
        spans = [r for r in intervals if r["state"] == state and r["start_time"] is not None]
        figure.add_bar(
            name=state, orientation="h", marker_color=color,
            y=[f"broker {r['broker_id']}" for r in spans],
            base=[r["start_time"] for r in spans],
            x=[((r["end_time"] or end_time) - r["start_time"]).total_seconds() * 1000 for r in spans],
            customdata=[[r["start_offset"], r["end_offset"]] for r in spans],
            hovertemplate="%{y} " + state + " from offset %{customdata[0]} to %{customdata[1]}<extra></extra>",
        )
    figure.update_layout(barmode="overlay", xaxis={"type": "date"})
    return Chart("brokers", "Brokers: registered / fenced / controlled shutdown", figure)


def _step(div_id: str, title: str, rows: list[dict[str, Any]], column: str, x_range: tuple[Any, Any],
          breaks: list[Any]) -> Chart:
    """A step line to the end of the range (a flat zero when nothing ever counted), broken at each gap."""
    times = [r["time"] for r in rows] + [x_range[1]] if rows else list(x_range)
    values = [r[column] for r in rows] + [rows[-1][column]] if rows else [0, 0]
    times, values = _broken(times, values, breaks)
    figure = go.Figure(go.Scatter(x=times, y=values, mode="lines", line_shape="hv", name=column))
    return Chart(div_id, title, figure, "" if rows else "none in this range")


def _leaders(rows: list[dict[str, Any]], end_time: Any, breaks: list[Any]) -> Chart:
    figure = go.Figure()
    for broker in sorted({r["broker_id"] for r in rows}):
        mine = [r for r in rows if r["broker_id"] == broker]
        times, values = _broken([r["time"] for r in mine] + [end_time],
                                [r["leaders"] for r in mine] + [mine[-1]["leaders"]], breaks)
        figure.add_scatter(x=times, y=values, mode="lines", line_shape="hv", name=f"broker {broker}")
    return Chart("leaders", "Partition leaders per broker", figure)


def _epochs(rows: list[dict[str, Any]], end_time: Any) -> Chart:
    figure = go.Figure(go.Scatter(x=[r["time"] for r in rows] + [end_time], y=[r["epoch"] for r in rows]
                                  + [rows[-1]["epoch"] if rows else None], mode="lines+markers",
                                  line_shape="hv", name="epoch"))
    return Chart("raft_epochs", "Raft leader epoch", figure,
                 "Each epoch is one Raft leader's term (from the batches table; the leader's id is in the "
                 "LeaderChange control records, not in the tables).")


def _event_markers(events: list[dict[str, Any]]) -> Chart:
    figure = go.Figure(go.Scatter(
        x=[e["time"] for e in events], y=[e["kind"] for e in events], mode="markers",
        text=[f"{e['change']} {e['key']}: {e['before']} → {e['after']}" for e in events], hoverinfo="x+text",
    ))
    return Chart("events_chart", "Events over time (see the table below)", figure)


def text_report(spark: Any, reader: WarehouseReader) -> str:
    """The short text `make run` prints, queried the way a user would: Spark SQL over the views of the last
    published image (registered here), and one partition read back by time travel."""
    images = reader.images()
    if not images:
        return f"{reader.uri}: no image published yet"
    register_views(spark, reader)
    lines = [f"warehouse {reader.uri}", "", "tables at the last published image (Spark SQL):"]
    for name in TABLES:
        rows = spark.sql(f"SELECT count(*) AS n FROM {name}").first()["n"]
        versions = spark.sql(f"SELECT count(*) AS n FROM {history_name(name)}").first()["n"]
        lines.append(f"  {name:<18} {rows:>8} rows   {versions:>8} row versions in {history_name(name)}")
    snapshots = sum(image.snapshot for image in images)
    lines += [
        "",
        f"history: {reader.known().describe()}",
        f"image rows: {len(images)} (offsets {images[0].offset}..{images[-1].offset}"
        + (f", {snapshots} from snapshots" if snapshots else "") + ")",
    ]
    lines += _kraft_features(spark)
    lines += _time_travel_example(spark, reader)
    return "\n".join(lines)


def _kraft_features(spark: Any) -> list[str]:
    """Registered controllers, and how often ELRs and reassignments appear in the partitions' history."""
    controllers = [r["controller_id"] for r in spark.sql(
        "SELECT controller_id FROM controllers ORDER BY controller_id").collect()]
    with_elr = spark.sql(
        "SELECT count(DISTINCT topic_name, partition_id) AS n FROM partitions_history WHERE size(elr) > 0"
    ).first()["n"]
    reassigned = spark.sql(
        "SELECT count(DISTINCT topic_name, partition_id) AS n FROM partitions_history "
        "WHERE size(adding_replicas) > 0 OR size(removing_replicas) > 0"
    ).first()["n"]
    return [
        "",
        f"controllers registered: {controllers or 'none'}",
        f"partitions that had eligible leader replicas: {with_elr}; partitions reassigned: {reassigned}",
    ]


def _time_travel_example(spark: Any, reader: WarehouseReader) -> list[str]:
    """One partition's leader and ISR at three offsets: the partition whose leadership moved most."""
    busiest = spark.sql(
        "SELECT topic_name, partition_id, count(*) AS versions, min(from_offset) AS first, "
        "max(from_offset) AS last FROM partitions_history WHERE NOT deleted "
        "GROUP BY topic_name, partition_id ORDER BY versions DESC, topic_name, partition_id LIMIT 1"
    ).collect()
    if not busiest:
        return ["", "time travel: no partition in this warehouse"]
    topic, partition = busiest[0]["topic_name"], busiest[0]["partition_id"]
    first, last = busiest[0]["first"], busiest[0]["last"]
    lines = ["", f"time travel: {topic}-{partition} ({busiest[0]['versions']} versions)"]
    for offset in sorted({first, (first + last) // 2, last}):
        image = reader.image_at(offset)
        match = [
            row for row in image.tables["partitions"].to_pylist()
            if row["topic_name"] == topic and row["partition_id"] == partition
        ]
        state = (
            f"replicas {match[0]['replicas']}, leader {match[0]['leader']}, isr {match[0]['isr']}, "
            f"elr {match[0]['elr']}" if match else "absent"
        )
        lines.append(f"  at offset {offset:>8} (epoch {image.provenance.epoch}): {state}")
    return lines


def _template() -> jinja2.Template:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True
    )
    return environment.get_template("report.html.j2")
