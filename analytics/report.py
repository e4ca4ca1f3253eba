"""`kraftlake report`: one self-contained HTML page (plotly's JS inline, no network when viewed).

The figures come from the summary views (Spark SQL); only their small results are collected to draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from lake.reader import WarehouseReader
from lake.warehouse import Warehouse

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
    spark: Any, warehouse: Warehouse, out: Path, from_offset: int | None = None, to_offset: int | None = None
) -> Path:
    """Write the page for offsets [from_offset, to_offset] (default: all); the summary views must be registered."""
    last = WarehouseReader(warehouse).published_range()
    low, high = -1 if from_offset is None else from_offset, last if to_offset is None else to_offset
    span = spark.sql(f"SELECT min(base_offset) AS first, max(last_offset) AS last, "
                     f"timestamp_millis(min(append_time_ms)) AS t0, timestamp_millis(max(append_time_ms)) AS t1 "
                     f"FROM batches WHERE last_offset >= {low} AND base_offset <= {high}").first()
    end_time = span["t1"]
    x_range = (span["t0"], end_time)
    charts = [
        _swimlane(_rows(spark, f"SELECT * FROM broker_intervals WHERE start_offset <= {high} "
                               f"AND (end_offset IS NULL OR end_offset >= {low}) ORDER BY broker_id, start_offset"),
                  end_time),
        *(_step(name, title, _rows(spark, _window(name, column, low, high)), column, x_range)
          for name, title, column in (
              ("under_replicated", "Under-replicated partitions", "under_replicated"),
              ("under_min_isr", "Partitions under min.insync.replicas", "under_min_isr"),
              ("offline_partitions", "Offline partitions (no leader)", "offline"))),
        _leaders(_rows(spark, f"SELECT * FROM leaders_per_broker WHERE offset <= {high} ORDER BY broker_id, offset"),
                 end_time),
        _epochs(_rows(spark, f"SELECT * FROM raft_epochs WHERE offset <= {high} AND last_offset >= {low} "
                             "ORDER BY epoch"), end_time),
    ]
    events = _rows(spark, f"SELECT * FROM events WHERE offset BETWEEN {low} AND {high} ORDER BY offset, kind, key")
    charts.append(_event_markers(events))
    page = _template().render(
        warehouse=warehouse.uri, plotly_js=get_plotlyjs(), events=events,
        charts=[(chart, chart.html(x_range)) for chart in charts],
        first_offset=span["first"], last_offset=span["last"], first_time=span["t0"], last_time=end_time,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out.resolve()


def _window(view: str, column: str, low: int, high: int) -> str:
    """The view's steps inside [low, high], starting with the value in force at `low`."""
    return (f"SELECT offset, time, {column} FROM {view} WHERE offset BETWEEN {low} AND {high} UNION ALL "
            f"(SELECT offset, time, {column} FROM {view} WHERE offset < {low} ORDER BY offset DESC LIMIT 1) "
            "ORDER BY offset")


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


def _step(div_id: str, title: str, rows: list[dict[str, Any]], column: str, x_range: tuple[Any, Any]) -> Chart:
    """A step line to the end of the range (a flat zero when nothing ever counted)."""
    times = [r["time"] for r in rows] + [x_range[1]] if rows else list(x_range)
    values = [r[column] for r in rows] + [rows[-1][column]] if rows else [0, 0]
    figure = go.Figure(go.Scatter(x=times, y=values, mode="lines", line_shape="hv", name=column))
    return Chart(div_id, title, figure, "" if rows else "none in this range")


def _leaders(rows: list[dict[str, Any]], end_time: Any) -> Chart:
    figure = go.Figure()
    for broker in sorted({r["broker_id"] for r in rows}):
        mine = [r for r in rows if r["broker_id"] == broker]
        figure.add_scatter(x=[r["time"] for r in mine] + [end_time], y=[r["leaders"] for r in mine]
                           + [mine[-1]["leaders"]], mode="lines", line_shape="hv", name=f"broker {broker}")
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


def _template() -> jinja2.Template:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True
    )
    return environment.get_template("report.html.j2")
