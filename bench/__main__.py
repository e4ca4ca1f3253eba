"""Run the benchmarks and rewrite their sections of BENCHMARKS.md: `python -m bench [name ...]`.

Every module `bench/bench_<name>.py` exposes `run() -> list[dict]` (rows with name, value, unit, notes) and
owns the section `## <name>` of BENCHMARKS.md: its docstring, the table, and its optional `NOTES` text
(measurements made once, e.g. how a design was chosen, kept under the table). Only the sections of the
modules that ran are regenerated, so one slow benchmark never forces rerunning the others, and figures
always say which machine made them.
"""

from __future__ import annotations

import datetime
import importlib
import os
import pkgutil
import platform
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPORT = BENCH_DIR.parent / "BENCHMARKS.md"
PREAMBLE = (
    "# Benchmarks\n\n"
    "Written by `make bench` (`.venv/bin/python -m bench [name ...]`): one section per module\n"
    "`bench/bench_<name>.py`, regenerated in place when that module runs. Figures are medians of several\n"
    "repetitions, measured on the machine named in each section.\n"
)


def available() -> list[str]:
    return sorted(m.name.removeprefix("bench_") for m in pkgutil.iter_modules([str(BENCH_DIR)])
                  if m.name.startswith("bench_"))


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu}, {cores} cores, Python {platform.python_version()} ({platform.python_implementation()})"


def format_value(value: Any) -> str:
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def render_section(
    name: str, doc: str, rows: list[dict[str, Any]], host: str, when: datetime.datetime, notes: str = ""
) -> str:
    lines = [f"## {name}", ""]
    if doc:
        lines += [doc, ""]
    lines += [
        f"Machine: {host}. Run: {when:%Y-%m-%d %H:%M} UTC.",
        "",
        "| name | value | unit | notes |",
        "|---|---:|---|---|",
    ]
    for row in rows:
        cells = (row["name"], format_value(row["value"]), row.get("unit", ""), row.get("notes", ""))
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |")
    if notes:
        lines += ["", notes]
    return "\n".join(lines) + "\n"


def replace_section(report: str, name: str, section: str) -> str:
    """`report` with its `## name` section replaced by `section` (appended when new), others untouched."""
    parts: list[str] = []
    current: list[str] = []
    for line in report.splitlines(keepends=True):
        if line.startswith("## ") and current:
            parts.append("".join(current))
            current = []
        current.append(line)
    if current:
        parts.append("".join(current))
    heading = f"## {name}"
    replaced = False
    for index, part in enumerate(parts):
        if part.splitlines()[0].strip() == heading:
            parts[index] = section + "\n"
            replaced = True
    if not replaced:
        if parts and not parts[-1].endswith("\n\n"):
            parts[-1] = parts[-1].rstrip("\n") + "\n\n"
        parts.append(section + "\n")
    return "".join(parts).rstrip("\n") + "\n"


SUMMARY_INTRO = (
    "Every goal the benchmarks check, from their sections below (rows named `goal: ...`, and figures whose notes\n"
    "state a goal), rewritten with every run:\n"
)
_MACHINE = re.compile(r"^Machine: (?P<cpu>[^,]+), (?P<cores>\d+) cores.*Run: (?P<date>\S+) ", re.MULTILINE)


_GOAL = re.compile(r"goal (?P<op><=|>=) (?P<bound>[\d.,]+)")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _judged(value: str, before_goal: str, goal: re.Match[str]) -> str:
    """Met or not, for a figure whose notes state its goal (`... 0.78x the first (goal <= 1.25x)`): the last
    number of the notes before the goal is the figure compared (a ratio), else the row's value."""
    before = _NUMBER.findall(before_goal)
    figure = float((before[-1] if before else value).replace(",", ""))
    bound = float(goal["bound"].rstrip(".").replace(",", ""))
    return "met" if (figure <= bound if goal["op"] == "<=" else figure >= bound) else "NOT met"


def summary(report: str) -> str:
    """The goals table: for each goal row of each section, the goal, its latest figure, met or not, the
    machine and the date of the run that measured it."""
    lines = ["| section | goal | latest figure | met | machine, date |", "|---|---|---|---|---|"]
    for part in re.split(r"^(?=## )", report, flags=re.MULTILINE):
        if not part.startswith("## "):
            continue
        name = part.split("\n", 1)[0].removeprefix("## ").strip()
        machine = _MACHINE.search(part)
        where = f"{machine['cpu']}, {machine['cores']} cores, {machine['date']}" if machine else ""
        for row in re.findall(r"^\| (.*) \|$", part, flags=re.MULTILINE):
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row)]
            if len(cells) != 4 or cells[0] in ("name", "---"):
                continue
            label, value, unit, notes = cells
            if label.startswith("goal:"):
                goal, figure, met = label.removeprefix("goal:").strip(), notes or "(see the section)", value
            elif goal_in_notes := _GOAL.search(notes):
                goal, figure = f"{label}: {notes}", f"{value} {unit}".strip()
                met = _judged(value, notes[:goal_in_notes.start()], goal_in_notes)
            else:
                continue
            lines.append(f"| {name} | {goal} | {figure} | {met} | {where} |")
    return "\n".join(lines) + "\n"


def with_summary(report: str) -> str:
    """`report` opening with `PREAMBLE` and the goals table of its sections (what stood before the first
    section is replaced)."""
    first = re.search(r"^## ", report, flags=re.MULTILINE)
    sections = report[first.start():] if first else ""
    return f"{PREAMBLE}\n{SUMMARY_INTRO}\n{summary(sections)}\n{sections}"


def main(argv: Sequence[str]) -> int:
    names = [arg.removeprefix("bench_").removesuffix(".py") for arg in argv] or available()
    unknown = sorted(set(names) - set(available()))
    if unknown:
        print(f"bench: no benchmark named {', '.join(unknown)} (have: {', '.join(available())})", file=sys.stderr)
        return 2
    host = machine()  # before any benchmark pins itself to fewer cores
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        print(f"bench: running {name} ...", file=sys.stderr, flush=True)
        rows = module.run()
        doc = (module.__doc__ or "").strip()
        notes = getattr(module, "NOTES", "").strip()  # measurements made once, kept under the table
        section = render_section(name, doc, rows, host, datetime.datetime.now(datetime.UTC), notes)
        print(section)
        # read just before writing: another run may have rewritten other sections meanwhile
        report = REPORT.read_text() if REPORT.exists() else PREAMBLE
        REPORT.write_text(with_summary(replace_section(report, name, section)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
