"""Kafka's JSON form of records, checked against real `kafka-dump-log --cluster-metadata-decoder` output and
against the JsonConverter rules (version gating, tagged fields only when not default, base64, redaction)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from kraftlake.records import control_types, framing
from kraftlake.records import metadata_types as mt
from kraftlake.records.json_form import REDACTED, message_from_json, message_to_json

BY_TYPE_NAME = {schema.cls.TYPE_NAME: schema.cls for schema in mt.SCHEMAS}
PAYLOAD = re.compile(r"(?:valueSize: (\d+) .*)?payload: (\{.*\})\s*$")


def dump_lines(samples_dir: Path, name: str) -> list[tuple[int | None, dict]]:
    """(valueSize or None, payload) of every record line of one kafka-dump-log text."""
    found = []
    for line in (samples_dir / "dump-log-text" / name).read_text().splitlines():
        match = PAYLOAD.search(line)
        if match:
            size = int(match.group(1)) if match.group(1) else None
            found.append((size, json.loads(match.group(2))))
    return found


def test_strimzi_kafka_3_7_records_have_the_same_json_and_value_size(samples_dir: Path) -> None:
    lines = dump_lines(samples_dir, "strimzi-blog-2024-03-21-kraft-migration.txt")
    assert len(lines) == 6
    for value_size, payload in lines:
        assert value_size is not None, "every line of this dump names its valueSize"
        cls = BY_TYPE_NAME[payload["type"]]
        value = framing.encode_metadata_value(message_from_json(cls, payload["data"], payload["version"]),
                                              payload["version"])
        message, version = framing.decode_metadata_value(value)
        data = message_to_json(message, version)
        assert version == payload["version"]
        assert list(data.items()) == list(payload["data"].items())  # same fields, values and order
        if payload["type"] == "REGISTER_BROKER_RECORD":
            # The post's editors shortened the three host names by 4 characters each (see the file's notes).
            assert len(value) == value_size - 3 * 4
        else:
            assert len(value) == value_size


@pytest.mark.parametrize(
    "name", ["apache-kafka-2.8-config-kraft-README.txt", "apache-kafka-3.0-config-kraft-README.txt"]
)
def test_kafka_2_8_records_use_the_same_field_names(samples_dir: Path, name: str) -> None:
    """2.8's schemas were older (no `fenced`; nullable removing/addingReplicas), so only records whose v0
    schema is unchanged must match exactly; the others must use the same names for the fields they had."""
    lines = dump_lines(samples_dir, name)
    assert [p["type"] for _, p in lines] == [
        "REGISTER_BROKER_RECORD", "UNFENCE_BROKER_RECORD", "FENCE_BROKER_RECORD", "REGISTER_BROKER_RECORD",
        "UNFENCE_BROKER_RECORD", "TOPIC_RECORD", "PARTITION_RECORD",
    ]
    for _, payload in lines:
        cls = BY_TYPE_NAME[payload["type"]]
        ours = message_to_json(cls(), payload["version"])
        if payload["type"] in ("REGISTER_BROKER_RECORD", "PARTITION_RECORD"):
            assert set(payload["data"]) <= set(ours)
        else:
            message = message_from_json(cls, payload["data"], payload["version"])
            assert message_to_json(message, payload["version"]) == payload["data"]


def test_field_names_are_camel_case_schema_names() -> None:
    message = control_types.KRaftVersionRecord(version=0, kraft_version=1)
    assert message_to_json(message, 0) == {"version": 0, "kRaftVersion": 1}


def test_fields_follow_the_record_version() -> None:
    record = mt.PartitionRecord(partition_id=3, topic_id="xOxBrcYuSRWgtFuZIBiXIA", replicas=(1,), isr=(1,),
                                leader=1, leader_epoch=0, partition_epoch=0, directories=("SaZDxfHKu3NMZ7OnFP7YnA",))
    v0 = message_to_json(record, 0)
    v1 = message_to_json(record, 1)
    assert "directories" not in v0
    assert v1["directories"] == ["SaZDxfHKu3NMZ7OnFP7YnA"]
    assert list(v1) == ["partitionId", "topicId", "replicas", "isr", "removingReplicas", "addingReplicas",
                        "leader", "leaderEpoch", "partitionEpoch", "directories"]


def test_tagged_fields_are_printed_only_when_not_default() -> None:
    unchanged = mt.PartitionChangeRecord(partition_id=0, topic_id="xOxBrcYuSRWgtFuZIBiXIA")
    assert message_to_json(unchanged, 0) == {"partitionId": 0, "topicId": "xOxBrcYuSRWgtFuZIBiXIA"}
    changed = unchanged._replace(isr=(), leader=-1, eligible_leader_replicas=(1,))
    assert message_to_json(changed, 2) == {
        "partitionId": 0, "topicId": "xOxBrcYuSRWgtFuZIBiXIA", "isr": [], "leader": -1, "eligibleLeaderReplicas": [1],
    }
    assert "eligibleLeaderReplicas" not in message_to_json(changed, 1)


def test_nulls_are_printed_for_untagged_fields() -> None:
    broker = mt.RegisterBrokerRecord(broker_id=1, rack=None)
    assert message_to_json(broker, 0)["rack"] is None
    assert message_to_json(mt.ConfigRecord(name="retention.ms", value=None), 0)["value"] is None


def test_nested_structs_and_arrays() -> None:
    voters = control_types.VotersRecord(voters=(
        control_types.VotersVoter(
            voter_id=1, voter_directory_id="SaZDxfHKu3NMZ7OnFP7YnA",
            endpoints=(control_types.VoterEndpoint(name="CONTROLLER", host="c1", port=9093),),
            kraft_version_feature=control_types.KRaftVersionFeature(min_supported_version=0, max_supported_version=1),
        ),
    ))
    assert message_to_json(voters, 0) == {"version": 0, "voters": [{
        "voterId": 1, "voterDirectoryId": "SaZDxfHKu3NMZ7OnFP7YnA",
        "endpoints": [{"name": "CONTROLLER", "host": "c1", "port": 9093}],
        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
    }]}


def test_unknown_tagged_fields_only_when_present() -> None:
    topic = mt.TopicRecord(name="t", topic_id="xOxBrcYuSRWgtFuZIBiXIA")
    assert "_unknownTaggedFields" not in message_to_json(topic, 0)
    tagged = topic._replace(unknown_tagged_fields=((7, b"\x01\x02"), (90, b"")))
    assert message_to_json(tagged, 0)["_unknownTaggedFields"] == [{"tag": 7, "data": "AQI="}, {"tag": 90, "data": ""}]
    assert message_from_json(mt.TopicRecord, message_to_json(tagged, 0), 0) == tagged


SALT, STORED, SERVER = b"salt-\xff\x00secret", b"stored-key-bytes", b"server-key-bytes"


def test_scram_credentials_are_redacted_by_default() -> None:
    record = mt.UserScramCredentialRecord(name="alice", mechanism=1, salt=SALT, stored_key=STORED,
                                          server_key=SERVER, iterations=4096)
    text = json.dumps(message_to_json(record, 0))
    for secret in (SALT, STORED, SERVER):
        assert base64.b64encode(secret).decode() not in text
    assert json.loads(text) == {"name": "alice", "mechanism": 1, "salt": REDACTED, "storedKey": REDACTED,
                                "serverKey": REDACTED, "iterations": 4096}
    clear = message_to_json(record, 0, redact=False)
    assert base64.b64decode(clear["salt"]) == SALT
    assert message_from_json(mt.UserScramCredentialRecord, clear, 0) == record


@pytest.mark.parametrize(("resource_type", "name"), [
    (4, "ssl.keystore.password"), (4, "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"),
    (4, "ssl.truststore.certificates"), (4, "custom.plugin.timeout"), (2, "log.retention.ms"), (99, "retention.ms"),
])
def test_secret_config_values_are_redacted(resource_type: int, name: str) -> None:
    record = mt.ConfigRecord(resource_type=resource_type, resource_name="1", name=name, value="hunter2")
    data = message_to_json(record, 0)
    assert data["value"] == REDACTED and "hunter2" not in json.dumps(data)
    assert data["name"] == name
    assert message_to_json(record, 0, redact=False)["value"] == "hunter2"


@pytest.mark.parametrize(("resource_type", "name"), [
    (2, "retention.ms"), (4, "log.retention.ms"), (4, "listener.name.external.ssl.keystore.type"),
    (8, "kafka.server.ReplicaManager"), (16, "metrics"),
])
def test_ordinary_config_values_are_kept(resource_type: int, name: str) -> None:
    data = message_to_json(mt.ConfigRecord(resource_type=resource_type, name=name, value="v"), 0)
    assert data["value"] == "v"


def test_deleted_sensitive_config_stays_null() -> None:
    assert message_to_json(mt.ConfigRecord(name="sasl.jaas.config", value=None), 0)["value"] is None


def test_redacted_form_cannot_be_read_back_as_bytes() -> None:
    redacted = message_to_json(mt.UserScramCredentialRecord(salt=b"s"), 0)
    with pytest.raises(ValueError, match="redacted"):
        message_from_json(mt.UserScramCredentialRecord, redacted, 0)
