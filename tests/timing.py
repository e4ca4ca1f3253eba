"""Where the suite's time goes, printed at the end of every run (CI's log included): each test folder's total
(setup, call and teardown of its tests; a session fixture's start counts where it is first used) and count."""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath

import pytest
from _pytest.terminal import TerminalReporter


class FolderTimes:
    """Sums every report's duration by the test's folder under tests/ (`tests/lake`, `tests/explorer`, …)."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.tests: defaultdict[str, set[str]] = defaultdict(set)

    def add(self, report: pytest.TestReport) -> None:
        folder = _folder(report.nodeid)
        self.seconds[folder] += report.duration
        self.tests[folder].add(report.nodeid)

    def lines(self) -> list[str]:
        total = sum(self.seconds.values())
        rows = sorted(self.seconds.items(), key=lambda item: -item[1])
        lines = [f"{'folder':<24}{'tests':>7}{'seconds':>10}{'share':>8}"]
        for folder, seconds in rows:
            share = seconds / total if total else 0.0
            lines.append(f"{folder:<24}{len(self.tests[folder]):>7}{seconds:>10.1f}{share:>8.1%}")
        lines.append(f"{'all':<24}{sum(len(t) for t in self.tests.values()):>7}{total:>10.1f}")
        return lines


def _folder(nodeid: str) -> str:
    """`tests/lake/test_sink.py::test_x` → `tests/lake`; a test file directly under tests/ counts as `tests`."""
    path = PurePosixPath(nodeid.split("::", 1)[0])
    parts = path.parts
    return "/".join(parts[:2]) if len(parts) > 2 else str(path.parent)


_TIMES = FolderTimes()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _TIMES.add(report)


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    if not _TIMES.seconds:
        return
    terminalreporter.section("time per test folder")
    for line in _TIMES.lines():
        terminalreporter.write_line(line)
    processes = terminalreporter.config.getoption("numprocesses", None)
    if processes:  # pytest-xdist: the folders' times add up what the processes did side by side
        terminalreporter.write_line(f"(summed over {processes} processes running side by side: the run's own "
                                    "time is on pytest's last line)")
