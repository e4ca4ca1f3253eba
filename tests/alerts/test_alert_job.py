"""A real `kraftlake alert` following a warehouse the streaming job's pipeline writes in three commits (the
explorer's demo scenario, tests/explorer/scenario.py, its controller failing over at offset 30), sending to
Debian's Alertmanager and to a webhook (a real HTTP server here): every change the rules select arrives, with
before → after, its offset, time and explorer link, secrets redacted; the job killed with SIGKILL twice (once
with the webhook down and alerts waiting for it) sends no alert twice and loses none."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kraftlake.alerts.state import FOLDER
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.warehouse import Warehouse
from tests.alerts.conftest import RUNNING
from tests.explorer import scenario
from tests.fixtures.alertmanager import Alertmanager
from tests.replay.builders import data

KRAFTLAKE = [sys.executable, "-m", "kraftlake"]
WAIT_S = 180.0  # generous: a loaded 2-core machine
FAILOVER_AT = 30
RULES = """\
cluster = "demo"
explorer_url = "http://explorer.example:8080"
alertmanager = ["{alertmanager}"]
webhook = ["{webhook}"]

[[rule]]
name = "retention-changed"
table = "configs"
key = "topic:*:retention.ms"
when = "value_changed"
labels = {{ severity = "warning" }}

[[rule]]
name = "secret-config"
table = "configs"
key = "broker:*:ssl.*"
when = "value_changed"

[[rule]]
name = "acl-added"
table = "acls"
when = "added"

[[rule]]
name = "scram-user-added"
table = "scram_credentials"
when = "added"

[[rule]]
name = "broker-fenced"
table = "brokers"
when = "fenced"

[[rule]]
name = "topic-deleted"
table = "topics"
when = "deleted"

[[rule]]
name = "under-min-isr"
table = "partitions"
key = "orders-*"
when = "under_min_isr"
for_seconds = 5

[[rule]]
name = "controller-changed"
table = "controller"
when = "changed"
"""
# (rule, resource, offset, before, after): the scenario's changes the rules select
FIRST = {
    ("broker-fenced", "2", 12, "active", "fenced"),
    ("retention-changed", "topic:orders:retention.ms", 23, "", "1000"),
    ("retention-changed", "topic:orders:retention.ms", 24, "1000", "2000"),
}
REST = {
    ("scram-user-added", "alice:SCRAM-SHA-256", 27, "", "SCRAM-SHA-256, 4096 iterations"),
    ("acl-added", "TOPIC:orders:User:alice", 28, "", "LITERAL READ ALLOW from host *"),
    ("controller-changed", "controller", FAILOVER_AT, "epoch 1", "epoch 2"),
    ("secret-config", "broker:0:ssl.keystore.password", 31, "", "[redacted]"),
    ("topic-deleted", "payments", 34, "topic id AAAAAAAAAAAAAAAAAAAEEQ", ""),
    ("retention-changed", "topic:orders:retention.ms", 35, "2000", "604800000"),
    # orders-0's ISR [0, 1] at 26 under the topic's min.insync.replicas 3 (25); 9 s later in the log, still under
    ("under-min-isr", "orders-0", 26, "in sync",
     "under min ISR for 9 s (as of offset 35, 2026-11-26T02:14:15.000+00:00)"),
}


@dataclass
class WebhookReceiver:
    """A real HTTP server taking the webhook's POSTs, or answering `refusing` (a status) to them."""

    received: list[dict[str, Any]] = field(default_factory=list)
    refusing: int = 0
    server: ThreadingHTTPServer | None = None

    def start(self) -> str:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.refusing:
                    self.send_response(receiver.refusing)
                else:
                    receiver.received.extend(json.loads(body)["alerts"])
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # bound here: the port is the kernel's
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()
    yield receiver
    if receiver.server is not None:
        receiver.server.shutdown()
        receiver.server.server_close()


def write(pipeline: MetadataPipeline, offsets: range) -> None:
    """The scenario's records at `offsets`, one batch each, published in the commits the demo makes."""
    for offset in offsets:
        epoch = 2 if offset >= FAILOVER_AT else 1
        pipeline.load(data(offset, epoch, 100, [scenario.RECORDS[offset]],
                           append_time_ms=scenario.START_MS + offset * 1000))
        if offset in (12, 26, scenario.LAST):
            pipeline.commit()


def start(warehouse: Warehouse, alerts: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        process = subprocess.Popen([*KRAFTLAKE, "alert", "--warehouse", warehouse.uri, "--alerts", str(alerts),
                                    "--from-offset", "-1"], stdout=subprocess.DEVNULL, stderr=output)
    RUNNING.append(process)
    return process


def kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(60)


def state(warehouse: Warehouse, name: str = "demo-alerts") -> dict[str, Any]:
    path = Path(warehouse.uri) / FOLDER / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else {"matched": -2, "outbox": {}}


def until(what: str, check: Callable[[], bool], process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert process.poll() is None, f"the alert job exited: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{what}: not after {WAIT_S:.0f} s; log: {log.read_text()[-3000:]}"
        time.sleep(0.2)


def facts(message: dict[str, Any]) -> tuple[str, str, int, str, str]:
    labels, notes = message["labels"], message["annotations"]
    return labels["alertname"], labels["resource"], int(labels["offset"]), notes["before"], notes["after"]


def test_changes_reach_alertmanager_and_a_webhook_once_across_sigkills(
        alertmanager: Alertmanager, webhook: WebhookReceiver, tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    pipeline = MetadataPipeline(warehouse)
    alerts, log = tmp_path / "demo-alerts.toml", tmp_path / "alert.log"
    alerts.write_text(RULES.format(alertmanager=alertmanager.url, webhook=webhook.start()))
    write(pipeline, range(0, 27))

    job = start(warehouse, alerts, log)
    until("the first stretch delivered", lambda: state(warehouse)["matched"] == 26
          and not any(state(warehouse)["outbox"].values()), job, log)
    kill(job)
    assert {facts(m) for m in webhook.received} == FIRST

    webhook.refusing = 503  # the rest waits for the webhook in the kept state while Alertmanager takes it
    write(pipeline, range(27, scenario.LAST + 1))
    job = start(warehouse, alerts, log)
    until("the rest matched and in Alertmanager", lambda: state(warehouse)["matched"] == scenario.LAST
          and {facts(a) for a in alertmanager.alerts(cluster="demo")} == FIRST | REST, job, log)
    until("the webhook's alerts waiting", lambda: len(state(warehouse)["outbox"][f"webhook {webhook_url(alerts)}"])
          == len(REST), job, log)
    kill(job)

    webhook.refusing = 0
    job = start(warehouse, alerts, log)
    until("the webhook's alerts delivered", lambda: len(webhook.received) >= len(FIRST | REST), job, log)
    job.send_signal(signal.SIGTERM)
    assert job.wait(60) == 0

    ids = [m["id"] for m in webhook.received]
    assert len(ids) == len(set(ids)) == len(FIRST | REST), "an alert sent twice"
    assert {facts(m) for m in webhook.received} == FIRST | REST
    held = alertmanager.alerts(cluster="demo")
    assert len(held) == len(FIRST | REST)
    retention = next(a for a in held if a["labels"]["offset"] == "35")
    assert retention["labels"] == {"alertname": "retention-changed", "cluster": "demo", "kind": "config_value_changed",
                                   "resource": "topic:orders:retention.ms", "offset": "35", "severity": "warning"}
    assert retention["annotations"]["time"] == "2026-11-26T02:14:15.000+00:00"
    assert retention["annotations"]["explorer"] == "http://explorer.example:8080/clusters/demo?at=35"
    assert retention["annotations"]["summary"] == \
        "config value changed: topic:orders:retention.ms: 2000 → 604800000 at offset 35"
    everything = json.dumps(webhook.received) + json.dumps(held) + log.read_text()
    assert not [secret for secret in scenario.SECRETS if secret in everything]
    lines = log.read_text().splitlines()
    down = [line for line in lines if "503" in line]
    assert down == [f"alert demo-alerts (demo): webhook {webhook_url(alerts)}: answered 503 Service Unavailable "
                    f"({len(REST)} alert(s) waiting, retrying with backoff)"]
    assert lines[-1] == f"alert demo-alerts (demo): stopped: matched through offset {scenario.LAST}"


def webhook_url(alerts: Path) -> str:
    return next(line.split('"')[1] for line in alerts.read_text().splitlines() if line.startswith("webhook"))


def test_an_alertmanager_answering_4xx_is_one_line_and_the_other_receiver_gets_everything(
        webhook: WebhookReceiver, tmp_path: Path) -> None:
    refusing = WebhookReceiver(refusing=400)  # an HTTP server posing as an Alertmanager that rejects the alerts
    try:
        bad = refusing.start().removesuffix("/hook")
        warehouse = Warehouse(tmp_path / "warehouse")
        write(MetadataPipeline(warehouse), range(0, scenario.LAST + 1))
        alerts, log = tmp_path / "refused.toml", tmp_path / "alert.log"
        alerts.write_text(RULES.format(alertmanager=bad, webhook=webhook.start()).replace('cluster = "demo"',
                                                                                          'name = "refused"'))
        job = start(warehouse, alerts, log)
        until("the webhook's alerts delivered", lambda: len(webhook.received) == len(FIRST | REST), job, log)
        until("the refusal logged", lambda: "answered 400" in log.read_text(), job, log)
        assert state(warehouse, "refused")["outbox"][f"alertmanager {bad}"], "the refused alerts are kept, not dropped"
        job.send_signal(signal.SIGTERM)
        assert job.wait(60) == 0
        refused = [line for line in log.read_text().splitlines() if "400" in line]
        assert refused == [f"alert refused (default): alertmanager {bad}: answered 400 Bad Request "
                           f"({len(FIRST | REST)} alert(s) waiting, retrying with backoff)"]

        alerts.write_text(alerts.read_text().replace(f'alertmanager = ["{bad}"]', "alertmanager = []"))
        job = start(warehouse, alerts, log)  # the refusing receiver taken out of the file: its alerts go too
        until("the receiver forgotten", lambda: list(state(warehouse, "refused")["outbox"]) == [
            f"webhook {webhook_url(alerts)}"], job, log)
        job.send_signal(signal.SIGTERM)
        assert job.wait(60) == 0
        assert f"alert refused (default): alertmanager {bad} is no longer in {alerts}: its {len(FIRST | REST)} " \
               "waiting alert(s) are dropped" in log.read_text().splitlines()
        assert len(webhook.received) == len(FIRST | REST), "nothing sent again"
    finally:
        assert refusing.server is not None
        refusing.server.shutdown()
        refusing.server.server_close()


def test_a_bad_alerts_file_is_one_line_naming_the_file_line_and_rule(tmp_path: Path) -> None:
    alerts = tmp_path / "alerts.toml"
    alerts.write_text(RULES.format(alertmanager="http://127.0.0.1:9", webhook="http://127.0.0.1:9")
                      .replace('table = "topics"', 'table = "topicz"'))
    done = subprocess.run([*KRAFTLAKE, "alert", "--warehouse", str(tmp_path / "w"), "--alerts", str(alerts)],
                          capture_output=True, text=True, timeout=120)
    line = next(n for n, text in enumerate(alerts.read_text().splitlines(), 1) if "topic-deleted" in text) - 1
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        f"kraftlake alert: {alerts}:{line}: rule 'topic-deleted': unknown table 'topicz'; tables: configs, acls, "
        "scram_credentials, brokers, topics, partitions, controller"]
