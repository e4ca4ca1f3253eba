"""Fixtures of the explorer's tests: two real warehouses (the demo-like scenario, and a real Kafka sample built
by `kraftlake ingest`), the real `kraftlake ui` process serving one over loopback, and Debian's Chromium
driven by Playwright (browsers cannot be downloaded here)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kraftlake.explorer.app import Settings, create_app
from kraftlake.explorer.service import Explorer
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from tests.explorer import scenario
from tests.fixtures.browser import artifact_screenshot

KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]
REPO = Path(__file__).resolve().parents[2]
SAMPLE = "rjmfernandes_flink-on-prem/data"  # 63 topics, 150 partitions, two snapshots, a broker going away
URL_LINE = re.compile(r"kraftlake ui: (http://\S+)")
START_TIMEOUT_S = 60


@pytest.fixture(scope="session")
def demo_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    return scenario.build(tmp_path_factory.mktemp("explorer-demo") / "warehouse")


@pytest.fixture(scope="session")
def sample_warehouse(tmp_path_factory: pytest.TempPathFactory, samples_dir: Path) -> Warehouse:
    """A real cluster's metadata log, ingested as users do it (`kraftlake ingest`)."""
    path = tmp_path_factory.mktemp("explorer-sample") / "warehouse"
    subprocess.run([*KRAFTLAKE, "ingest", str(samples_dir / SAMPLE), "--warehouse", str(path)], check=True,
                   capture_output=True, text=True)
    return Warehouse(path)


def client_for(warehouse: Warehouse, cluster: str = "demo") -> TestClient:
    """The app in this process (no port), for API tests that need no browser."""
    return TestClient(create_app(Settings(Explorer(WarehouseReader(warehouse), cluster))))


@pytest.fixture(scope="session")
def demo_client(demo_warehouse: Warehouse) -> TestClient:
    return client_for(demo_warehouse)


@dataclass
class RunningUi:
    url: str  # the URL `kraftlake ui` printed
    process: subprocess.Popen[str]

    @property
    def base(self) -> str:
        return self.url.split("/?")[0].rstrip("/")


def start_ui(source: Warehouse | Path, *flags: str, env: dict[str, str] | None = None) -> RunningUi:
    """`kraftlake ui` as users start it (over a warehouse, or a fleet file's clusters), on a free port; returns
    once it printed its URL and answers."""
    served = ["--warehouse", source.uri] if isinstance(source, Warehouse) else ["--fleet", str(source)]
    process = subprocess.Popen([*KRAFTLAKE, "ui", *served, *flags], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})})
    assert process.stdout is not None
    line = process.stdout.readline()
    found = URL_LINE.search(line)
    if not found:
        process.kill()
        raise AssertionError(f"kraftlake ui did not start: {line}{process.stdout.read()}")
    return RunningUi(found.group(1), process)


def stop_ui(ui: RunningUi) -> None:
    ui.process.terminate()
    try:
        ui.process.wait(10)
    except subprocess.TimeoutExpired:
        ui.process.kill()
        ui.process.wait(10)


@pytest.fixture(scope="module")
def running_ui() -> Iterator[Callable[..., RunningUi]]:
    """Starts `kraftlake ui` processes for the module; each is stopped (by its own pid) at the end."""
    started: list[RunningUi] = []

    def start(source: Warehouse | Path, *flags: str, env: dict[str, str] | None = None) -> RunningUi:
        started.append(start_ui(source, *flags, env=env))
        return started[-1]

    yield start
    for ui in started:
        stop_ui(ui)


def screenshot(page: Any, name: str, full_page: bool = True) -> Path:
    """A screenshot kept in build/test-artifacts/explorer/; the README's two images are
    `demo-timeline-view.png` and `sample-cluster-view.png` from here."""
    return artifact_screenshot(page, "explorer", name, full_page)
