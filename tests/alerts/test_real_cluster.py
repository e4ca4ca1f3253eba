"""Change alerts from a real Kafka cluster: an operator's changes on a real Apache Kafka node (a topic's
retention, a secret broker config, a SCRAM user, a topic deleted, through Kafka's Admin API), its metadata log
ingested into a warehouse (`kraftlake ingest`, the node stopped), and a real `kraftlake alert` sending them to
Debian's Alertmanager and a webhook: each arrives once, read back through Alertmanager's API, with Kafka's
values before and after, and neither the SCRAM password nor the secret config's value anywhere."""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from pathlib import Path

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kraftlake.cli.broker import LocalBroker
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.files import METADATA_PARTITION_DIR
from tests.alerts.test_alert_job import KRAFTLAKE, WebhookReceiver, facts, start, until
from tests.fixtures.alertmanager import Alertmanager
from tests.fixtures.broker import create_topic

PASSWORD = "scram-password-" + uuid.uuid4().hex[:8]
KEYSTORE = "keystore-password-" + uuid.uuid4().hex[:8]


def operate(bootstrap: str, user: str) -> tuple[str, str]:
    """The operator's changes; the two topics' names (the one kept, the one deleted)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    kept, deleted = create_topic(bootstrap), create_topic(bootstrap)
    topic = ConfigResource(ResourceType.TOPIC, kept, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    broker = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
        ConfigEntry("listener.name.external.ssl.keystore.password", KEYSTORE,
                    incremental_operation=AlterConfigOpType.SET)])
    for resource in (topic, broker):
        admin.incremental_alter_configs([resource])[resource].result(60)
    credential = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                              PASSWORD.encode())
    for future in admin.alter_user_scram_credentials([credential]).values():
        future.result(60)
    admin.delete_topics([deleted])[deleted].result(60)
    del admin  # its threads stop here, before the broker does
    return kept, deleted


def test_a_real_clusters_changes_reach_alertmanager_and_the_webhook(alertmanager: Alertmanager, tmp_path: Path) -> None:
    user = f"alice-{uuid.uuid4().hex[:6]}"
    broker = LocalBroker(tmp_path / "broker").start()
    try:
        kept, deleted = operate(broker.bootstrap_servers, user)
    finally:
        broker.stop()
    warehouse = tmp_path / "warehouse"
    done = subprocess.run([*KRAFTLAKE, "ingest", str(broker.data_dir / "logs" / METADATA_PARTITION_DIR),
                           "--warehouse", str(warehouse)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr

    webhook = WebhookReceiver()
    try:
        alerts, log = tmp_path / "real.toml", tmp_path / "alert.log"
        alerts.write_text(f"""\
cluster = "real"
alertmanager = ["{alertmanager.url}"]
webhook = ["{webhook.start()}"]
[[rule]]
name = "retention"
table = "configs"
key = "topic:{kept}:retention.ms"
when = "value_changed"
[[rule]]
name = "broker-secret"
table = "configs"
key = "broker:1:*.ssl.keystore.password"
when = "value_changed"
[[rule]]
name = "scram"
table = "scram_credentials"
key = "{user}:*"
when = "added"
[[rule]]
name = "deleted"
table = "topics"
key = "{deleted}"
when = "deleted"
""")
        job = start(Warehouse(warehouse), alerts, log)
        expected = {("retention", f"topic:{kept}:retention.ms", "", "-1"),  # created with it (create_topic)
                    ("retention", f"topic:{kept}:retention.ms", "-1", "3600000"),
                    ("broker-secret", "broker:1:listener.name.external.ssl.keystore.password", "", "[redacted]"),
                    ("scram", f"{user}:SCRAM-SHA-256", "", "SCRAM-SHA-256, 8192 iterations")}

        def seen(messages: list[dict]) -> set[tuple[str, str, str, str]]:
            return {(r, resource, before, after) for r, resource, _, before, after in map(facts, messages)}

        until("the webhook's alerts", lambda: len(webhook.received) == len(expected) + 1, job, log)
        until("Alertmanager's alerts", lambda: len(alertmanager.alerts(cluster="real")) == len(expected) + 1, job, log)
        job.send_signal(signal.SIGTERM)
        assert job.wait(60) == 0
    finally:
        assert webhook.server is not None
        webhook.server.shutdown()
        webhook.server.server_close()
    for messages in (webhook.received, alertmanager.alerts(cluster="real")):
        found = seen(messages)
        assert found - {f for f in found if f[0] == "deleted"} == expected
        assert [f[1] for f in found if f[0] == "deleted"] == [deleted]
    assert len({m["id"] for m in webhook.received}) == len(webhook.received)
    everything = json.dumps(webhook.received) + json.dumps(alertmanager.alerts()) + log.read_text()
    assert PASSWORD not in everything and KEYSTORE not in everything
