"""The README's "Follow your cluster", exactly as written, against a real local Kafka node (Apache Kafka, one
combined broker and controller, started as `kraftlake broker start` starts it): its controller and broker
addresses stand in for `ctrl1:9093` and `kafka1:9092`; `follow` and `materialize` run in the background (the
second once the first created the topic, as the README says), and the third command answers once the
warehouse has an image."""

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


def wait_for_topic(bootstrap: str, topic: str, timeout_s: float = 120.0) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while topic not in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"follow created no topic {topic} in {timeout_s:.0f} s"
        time.sleep(1)


def readme_follow_commands() -> tuple[tuple[str, ...], ...]:
    blocks = [e.commands for e in examples(REPO / "README.md")
              if e.commands and e.commands[0][:2] == ("follow", "--bootstrap-controllers")]
    assert len(blocks) == 1, "one block in the README follows one cluster (the fleet's has its own test)"
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
    background = [subprocess.Popen([*cli, *follow], cwd=tmp_path, env=environment, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)]
    try:
        wait_for_topic(node.bootstrap_servers, "kraftlake-metadata")  # as the README says: once follow created it
        background.append(subprocess.Popen([*cli, *materialize], cwd=tmp_path, env=environment,
                                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while True:
            answer = subprocess.run([*cli, *query], cwd=tmp_path, env=environment, capture_output=True, text=True)
            if answer.returncode == 0:
                break
            stopped = [(name, process) for name, process in zip(("follow", "materialize"), background, strict=False)
                       if process.poll() is not None]
            assert not stopped, [(name, process.returncode, process.communicate()[0].decode(errors="replace")[-2000:])
                                 for name, process in stopped]
            assert time.monotonic() < deadline, f"no answer in {ANSWER_TIMEOUT_S:.0f} s: {answer.stderr[-500:]}"
            time.sleep(5)
        assert " insert " in answer.stdout and "fenced" in answer.stdout, answer.stdout
    finally:
        for process in background:
            process.send_signal(signal.SIGTERM)
        outputs = [process.communicate(timeout=120)[0].decode(errors="replace") for process in background]
    assert background[0].returncode == 0, outputs[0][-2000:]  # follow stops cleanly on SIGTERM
