"""The explorer's cursor dragged across a warehouse's whole history in a real browser, each moment it shows
compared with what `kraftlake image --at-offset` answers there: the moment's offset and epoch, its topic and
partition counts, the under-replicated and offline partitions and each broker's state. Shared by the browser
test (a small warehouse) and `make bench ui` (1M partitions)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kraftlake.lake.warehouse import Warehouse

KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]
MOMENT_TIMEOUT_MS = 600_000  # a moment at 1M partitions on a loaded machine: seconds, never minutes
_SUMMARY_ROWS = re.compile(r"^\s+(\w+)\s+(\d+) rows$", re.MULTILINE)
_SUMMARY_EPOCH = re.compile(r"^image at offset \d+: .*\(epoch (-?\d+),", re.MULTILINE)


@dataclass(frozen=True)
class Moment:
    """What one moment holds, as the explorer's cursor card states it or as the CLI's answer gives it."""

    offset: int
    epoch: int
    topics: int
    partitions: int
    under_replicated: int
    offline: int
    brokers: dict[str, str]  # broker id -> registered / fenced / controlled shutdown


def _cli(warehouse: Warehouse, offset: int, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*KRAFTLAKE, "image", "--warehouse", warehouse.uri, "--at-offset", str(offset), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _lines(process: subprocess.Popen[str]) -> Iterator[str]:
    """A CLI process's output, line by line (1M partitions' lines are counted as they come, never held); a
    failure says the CLI's own error (its stderr: a line or a traceback, read once its output ended)."""
    assert process.stdout is not None and process.stderr is not None
    yield from process.stdout
    assert process.wait() == 0, (process.args, process.stderr.read())


def cli_moment(warehouse: Warehouse, offset: int) -> Moment:
    """The moment at `offset` as `kraftlake image --at-offset N` answers it: its summary (epoch, row counts),
    its brokers and its partitions (three processes at once: the first two print a few lines)."""
    summary, brokers, partitions = (_cli(warehouse, offset, *flags)
                                    for flags in ((), ("--table", "brokers"), ("--table", "partitions")))
    under_replicated = offline = 0
    for line in _lines(partitions):
        p = json.loads(line)
        under_replicated += len(p["isr"]) < len(p["replicas"])
        offline += p["leader"] < 0
    states = {str(b["broker_id"]): "fenced" if b["fenced"] else "controlled shutdown" if b["in_controlled_shutdown"]
              else "registered" for b in map(json.loads, _lines(brokers))}
    text = "".join(_lines(summary))
    counts = {name: int(count) for name, count in _SUMMARY_ROWS.findall(text)}
    epoch = _SUMMARY_EPOCH.search(text)
    assert epoch is not None, text
    return Moment(offset, int(epoch.group(1)), counts["topics"], counts["partitions"], under_replicated, offline,
                  states)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def shown_moment(page: Any) -> Moment:
    """The moment the timeline's cursor card states (`At offset N`, its series, brokers and row counts)."""
    title = page.locator("[data-testid=at-cursor] .card h2").first.inner_text()
    items = page.locator("[data-testid=at-cursor] .card").first.locator("li").all_inner_texts()
    values = dict(item.split(": ", 1) for item in items if ": " in item)
    [counts] = [re.fullmatch(r"(\d+) topics?, (\d+) partitions?, epoch (-?\d+)", item) for item in items
                if " partition" in item and ", epoch " in item]
    assert counts is not None, items
    brokers = {key.removeprefix("broker "): state for key, state in values.items() if key.startswith("broker ")}
    return Moment(_number(title.removeprefix("At offset ")), int(counts.group(3)), int(counts.group(1)),
                  int(counts.group(2)), _number(values["under replicated"]), _number(values["offline"]),
                  {broker: state for broker, state in brokers.items()
                   if state not in ("not yet registered", "unregistered")})


def drag_across(page: Any, base: str, steps: int) -> list[Moment]:
    """Open the timeline at `base` and drag its cursor from the left edge of the plot to the right in `steps`
    drags; after each, the moment the cursor card states once it names the offset the cursor settled on."""
    page.goto(f"{base}/")
    page.wait_for_selector("[data-testid=cursor]")
    plot = page.locator("[data-testid=timeline-plot]").bounding_box()
    assert plot is not None
    y = plot["y"] + 30
    xs = [plot["x"] + plot["width"] * step / (steps - 1) for step in range(steps)]  # its edges are its ends
    shown = []
    for before, x in zip([xs[0], *xs], xs, strict=False):
        page.evaluate("document.querySelector('[data-testid=at-cursor]').replaceChildren()")
        page.mouse.move(before, y)
        page.mouse.down()
        page.mouse.move(x, y, steps=4)
        page.mouse.up()
        # the settled offset, then its card (a card an earlier summary was still fetching is not this one)
        page.wait_for_function("() => /^offset \\d+ /.test(document.querySelector('[data-testid=cursor-readout]')"
                               ".textContent)", timeout=MOMENT_TIMEOUT_MS)
        offset = page.locator("[data-testid=cursor-readout]").inner_text().split()[1]
        page.wait_for_function("title => [...document.querySelectorAll('[data-testid=at-cursor] .card h2')]"
                               ".some(h => h.textContent === title)", arg=f"At offset {offset}",
                               timeout=MOMENT_TIMEOUT_MS)
        shown.append(shown_moment(page))
    return shown
