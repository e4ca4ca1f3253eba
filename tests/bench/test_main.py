"""The benchmark runner's report handling: sections are regenerated in place and others are kept."""

from __future__ import annotations

import datetime
from typing import Any

from bench.__main__ import PREAMBLE, REPORT, available, format_value, render_section, replace_section, with_summary

WHEN = datetime.datetime(2026, 1, 2, 3, 4, tzinfo=datetime.UTC)


def section(name: str, value: float) -> str:
    rows = [{"name": "decode", "value": value, "unit": "records/s", "notes": "a|b"}]
    return render_section(name, f"What {name} measures.", rows, "Test CPU, 2 cores, Python 3.11.7", WHEN)


def test_a_section_names_the_machine_and_date_and_escapes_cells() -> None:
    text = section("records", 312_345.6)
    assert text.startswith("## records\n\nWhat records measures.\n")
    assert "Machine: Test CPU, 2 cores, Python 3.11.7. Run: 2026-01-02 03:04 UTC." in text
    assert "| decode | 312,346 | records/s | a\\|b |" in text


def test_sections_are_replaced_in_place_and_others_kept() -> None:
    report = replace_section(PREAMBLE, "records", section("records", 1.0))
    report = replace_section(report, "replay", section("replay", 2.0))
    updated = replace_section(report, "records", section("records", 3.0))
    assert updated.index("## records") < updated.index("## replay")
    assert updated.count("## records") == 1 and updated.count("## replay") == 1
    assert "| decode | 3 |" in updated and "| decode | 1 |" not in updated
    assert "| decode | 2 |" in updated
    assert updated.startswith(PREAMBLE.rstrip("\n"))


def test_values_are_formatted_for_reading() -> None:
    assert format_value(1234567) == "1,234,567"
    assert format_value(4142.4) == "4,142"
    assert format_value(3.14159) == "3.14"
    assert format_value("met") == "met"


def test_modules_are_discovered() -> None:
    assert "records" in available()


def test_notes_stay_under_the_table_when_a_section_is_regenerated() -> None:
    rows = [{"name": "commit", "value": 0.2, "unit": "s"}]
    notes = "How the layout was chosen: one file 0.9 s, 1,024 buckets 0.26 s."
    report = replace_section(PREAMBLE, "lake", render_section("lake", "Doc.", rows, "CPU", WHEN, notes))
    rows[0]["value"] = 0.3
    report = replace_section(report, "lake", render_section("lake", "Doc.", rows, "CPU", WHEN, notes))
    assert report.count(notes) == 1
    assert report.index("| commit | 0.3 | s |  |") < report.index(notes)


def test_the_summary_lists_every_goal_with_its_figure_verdict_machine_and_date() -> None:
    rows: list[dict[str, Any]] = [
            {"name": "goal: decode >= 300k records/s", "value": "met", "notes": "312,346 records/s"},
            {"name": "commit p50", "value": 0.5, "unit": "s", "notes": "0.8x the first (goal <= 1.25x)"},
            {"name": "open", "value": 0.5, "unit": "s", "notes": "(goal <= 0.3 s)"},
            {"name": "decode", "value": 1.0, "unit": "s", "notes": "no goal here"}]
    report = with_summary(replace_section(PREAMBLE, "records", render_section(
        "records", "", rows, "Test CPU, 2 cores, Python 3.11.7", WHEN)))
    table = report.split("## records")[0]
    assert "| records | decode >= 300k records/s | 312,346 records/s | met | Test CPU, 2 cores, 2026-01-02 |" in table
    assert "| records | commit p50: 0.8x the first (goal <= 1.25x) | 0.5 s | met |" in table
    assert "| records | open: (goal <= 0.3 s) | 0.5 s | NOT met |" in table
    assert "no goal here" not in table
    assert with_summary(report) == report


def test_benchmarks_md_opens_with_its_current_summary() -> None:
    text = REPORT.read_text()
    assert with_summary(text) == text, "regenerate it: bench.__main__.with_summary"
