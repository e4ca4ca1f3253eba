"""The README's "Follow your cluster", exactly as written, against a real local Kafka node (Apache Kafka, one
combined broker and controller, started as `kraftlake broker start` starts it): its controller and broker
addresses stand in for `ctrl1:9093` and `kafka1:9092`; `follow` and `materialize` run in the background, and
the third command answers once the warehouse has an image."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftlake.cli.broker import LocalBroker
from tests.docs.examples import REPO, examples

pytestmark = pytest.mark.integration

ANSWER_TIMEOUT_S = 400.0


def readme_follow_commands() -> tuple[tuple[str, ...], ...]:
    blocks = [e.commands for e in examples(REPO / "README.md") if e.commands and e.commands[0][0] == "follow"]
    assert len(blocks) == 1, "one `follow` block in the README"
    return blocks[0]


@pytest.fixture
def node(tmp_path: Path) -> Iterator[LocalBroker]:
    broker = LocalBroker(tmp_path / "kafka").start()
    try:
        yield broker
    finally:
        broker.stop()


def test_the_readmes_three_commands_follow_a_local_kafka_node(node: LocalBroker, tmp_path: Path) -> None:
    stand_ins = {"ctrl1:9093": node.node.controller_endpoint, "kafka1:9092": node.bootstrap_servers}
    follow, materialize, query = [[stand_ins.get(word, word) for word in command]
                                  for command in readme_follow_commands()]
    assert (follow[0], materialize[0]) == ("follow", "materialize")
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    cli = [sys.executable, "-m", "kraftlake.cli.main"]
    background = [subprocess.Popen([*cli, *command], cwd=tmp_path, env=environment, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT) for command in (follow, materialize)]
    try:
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while True:
            answer = subprocess.run([*cli, *query], cwd=tmp_path, env=environment, capture_output=True, text=True)
            if answer.returncode == 0:
                break
            assert all(process.poll() is None for process in background), "follow or materialize stopped"
            assert time.monotonic() < deadline, f"no answer in {ANSWER_TIMEOUT_S:.0f} s: {answer.stderr[-500:]}"
            time.sleep(5)
        assert " insert " in answer.stdout and "fenced" in answer.stdout, answer.stdout
    finally:
        for process in background:
            process.send_signal(signal.SIGTERM)
        outputs = [process.communicate(timeout=120)[0].decode(errors="replace") for process in background]
    assert background[0].returncode == 0, outputs[0][-2000:]  # follow stops cleanly on SIGTERM
