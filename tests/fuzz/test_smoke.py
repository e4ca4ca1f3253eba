"""Every fuzz target over its seeds, its regression inputs and deterministic mutations, without atheris: the
invariant (decode, or the project's own located error; bounded memory and time) holds in every `make test`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.corpus import REGRESSIONS, seeds
from tests.fuzz.targets import TARGETS, run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_target_holds_the_invariant(target: str, tmp_path: Path) -> None:
    """One process per target with its address space capped, so a huge allocation fails here instead of
    passing unnoticed on a machine with memory to spare."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.smoke", target, "--failures", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failing" in result.stdout


def test_every_regression_folder_names_a_target() -> None:
    assert {folder.name for folder in REGRESSIONS.iterdir() if folder.is_dir()} <= set(TARGETS)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_seeds_reach_past_the_first_check(target: str) -> None:
    """Most seeds decode (and replay) whole: a seed corpus that only produced errors would fuzz nothing deep."""
    inputs = seeds(target)
    decoded = 0
    for data in inputs:
        try:
            TARGETS[target].run(data)
        except Exception:
            continue
        decoded += 1
    assert decoded >= 0.9 * len(inputs), f"{decoded} of {len(inputs)} seeds decode"
    for data in inputs:
        run(TARGETS[target], data)
