"""kraftlake's restated schemas are Kafka's: every metadata record, control record and observer RPC is
compared, version by version and field by field, with the JSON message files inside Kafka 4.4.0's own jars
(the one check that the Python restatement says what Kafka's generator reads)."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kraftlake.records import control_types, metadata_types, rpc
from kraftlake.records.schema import BYTES, LEGACY_STRING, Array, Field, Primitive, StructSchema
from kraftlake.settings.jars import jars_root

KAFKA_VERSION = "4.4.0"
_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


def _jar(artifact: str) -> Path:
    path = jars_root() / "kafka" / f"{artifact}-{KAFKA_VERSION}.jar"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run make jars")
    return path


def kafka_schemas(artifact: str, folder: str) -> dict[str, dict[str, Any]]:
    """Every JSON message schema under `folder` in one of Kafka's jars, by name (`//` comments stripped)."""
    with zipfile.ZipFile(_jar(artifact)) as jar:
        texts = [jar.read(n).decode() for n in jar.namelist() if n.startswith(folder) and n.endswith(".json")]
    schemas = [json.loads(_COMMENT.sub("", text)) for text in texts]
    return {s["name"]: s for s in schemas}


def _range(spec: str | None) -> tuple[int, int] | None:
    """Kafka's version range text ("N+", "N-M", "N", "none") as (low, high); None for "none"."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 1 << 15
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def _in(spec: str | None, version: int) -> bool:
    bounds = _range(spec)
    return bounds is not None and bounds[0] <= version <= bounds[1]


def _kafka_default(kfield: dict[str, Any], version: int) -> Any:
    """The value Kafka's generated class starts with (what a tagged field is omitted at)."""
    raw = kfield.get("default")
    ktype = kfield["type"]
    if raw == "null":
        return None
    if ktype.startswith("[]"):
        return ()
    if raw is None:
        return {"bool": False, "string": "", "bytes": b"", "uuid": "AAAAAAAAAAAAAAAAAAAAAA",
                "float64": 0.0}.get(ktype, 0)
    if ktype == "bool":
        return raw == "true"
    if ktype == "float64":
        return float(raw)
    if ktype in ("string",):
        return raw
    return int(str(raw), 0)


def _type_text(ftype: Any) -> str:
    """kraftlake's field type in Kafka's spelling (a struct by its name)."""
    if isinstance(ftype, Array):
        return "[]" + _type_text(ftype.element)
    if isinstance(ftype, StructSchema):
        return ftype.name
    assert isinstance(ftype, Primitive)
    return {BYTES.name: "bytes", LEGACY_STRING.name: "string"}.get(ftype.name, ftype.name)


def _kafka_type_text(kfield: dict[str, Any]) -> str:
    return "[]bytes" if kfield["type"] == "[]records" else kfield["type"].replace("records", "bytes")


def compare_struct(
    where: str, ours: StructSchema, kafka_fields: list[dict[str, Any]], version: int, common: dict[str, Any],
    flexible: bool,
) -> list[str]:
    """Every difference between kraftlake's struct and Kafka's field list at one version, each naming where."""
    theirs = [f for f in kafka_fields if _in(f["versions"], version)]
    mine: list[Field] = [f for f in ours.fields if f.in_version(version)]
    problems: list[str] = []
    if [f.name for f in mine] != [f["name"] for f in theirs]:
        return [f"{where} v{version}: fields {[f.name for f in mine]} != Kafka's {[f['name'] for f in theirs]}"]
    for field, kfield in zip(mine, theirs, strict=True):
        at = f"{where}.{field.name} v{version}"
        if _type_text(field.type) != _kafka_type_text(kfield):
            problems.append(f"{at}: type {_type_text(field.type)} != Kafka's {kfield['type']}")
            continue
        if field.nullable_in(version) != _in(kfield.get("nullableVersions"), version):
            problems.append(f"{at}: nullable {field.nullable_in(version)} != Kafka's {kfield.get('nullableVersions')}")
        tag = kfield.get("tag") if flexible and _in(kfield.get("taggedVersions"), version) else None
        if field.tag != tag:
            problems.append(f"{at}: tag {field.tag} != Kafka's {tag}")
        # a string is int16-length where the field is never flexible, and in every version that is not flexible
        legacy = (kfield.get("flexibleVersions") == "none" or not flexible) and kfield["type"] == "string"
        if legacy != (field.type == LEGACY_STRING):
            problems.append(f"{at}: legacy (int16-length) string {field.type == LEGACY_STRING} != Kafka's {legacy}")
        element = field.type.element if isinstance(field.type, Array) else field.type
        if isinstance(element, StructSchema):
            nested = kfield.get("fields") or common.get(element.name)
            if nested is None:
                problems.append(f"{at}: Kafka declares no fields for struct {element.name}")
            else:
                problems += compare_struct(f"{where}.{field.name}", element, nested, version, common, flexible)
        elif kfield["type"] != "records" and field.default_value() != _kafka_default(kfield, version):
            problems.append(f"{at}: default {field.default_value()!r} != Kafka's {kfield.get('default')!r}")
    return problems


def compare_message(ours: StructSchema, kafka: dict[str, Any], all_versions: bool = True) -> list[str]:
    """Every difference between a kraftlake message schema and Kafka's JSON: versions, flexible versions and,
    for each version kraftlake declares, the fields. `all_versions=False` allows a restatement that starts
    later (the RPCs restate only their flexible versions) but it must reach Kafka's latest."""
    low, high = _range(kafka["validVersions"]) or (0, -1)
    problems: list[str] = []
    if (ours.min_version, ours.max_version) != (low, high) and (
        all_versions or ours.max_version != high or ours.min_version < low
    ):
        problems.append(f"{ours.name}: versions {ours.min_version}-{ours.max_version} != Kafka's {low}-{high}")
    common = {s["name"]: s["fields"] for s in kafka.get("commonStructs", [])}
    flex = _range(kafka["flexibleVersions"])
    for version in range(ours.min_version, high + 1):
        flexible = flex is not None and flex[0] <= version
        if (version >= ours.flexible_from) != flexible:
            problems.append(f"{ours.name} v{version}: flexible {not flexible} != Kafka's {kafka['flexibleVersions']}")
        problems += compare_struct(ours.name, ours, kafka["fields"], version, common, flexible)
    return problems


def test_every_metadata_record_type_is_kafkas() -> None:
    kafka = {s["name"]: s for s in kafka_schemas("kafka-metadata", "common/metadata/").values()
             if s["type"] == "metadata"}
    ours = {s.name: s for s in metadata_types.SCHEMAS}
    assert sorted(set(kafka) - set(ours)) == [], "record types Kafka writes that kraftlake lacks"
    assert sorted(set(ours) - set(kafka)) == [], "record types kraftlake declares that Kafka does not"
    problems = [p for name, schema in ours.items() for p in compare_message(schema, kafka[name])]
    problems += [f"{name}: api key {schema.cls.API_KEY} != Kafka's {kafka[name]['apiKey']}"
                 for name, schema in ours.items() if kafka[name]["apiKey"] != schema.cls.API_KEY]
    assert problems == []


CONTROL_RECORDS = ("LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord", "KRaftVersionRecord",
                   "VotersRecord")


def test_every_control_record_type_is_kafkas() -> None:
    kafka = kafka_schemas("kafka-clients", "common/message/")
    ours = {s.name: s for s in control_types.SCHEMAS}
    assert sorted(ours) == sorted(CONTROL_RECORDS)
    missing = [name for name in CONTROL_RECORDS if name not in kafka]
    assert missing == [], f"control record schemas not in kafka-clients-{KAFKA_VERSION}.jar"
    problems = [p for name, schema in ours.items() for p in compare_message(schema, kafka[name])]
    assert problems == []


RPCS = (rpc.REQUEST_HEADER, rpc.RESPONSE_HEADER, rpc.API_VERSIONS_REQUEST, rpc.API_VERSIONS_RESPONSE,
        rpc.FETCH_REQUEST, rpc.FETCH_RESPONSE, rpc.FETCH_SNAPSHOT_REQUEST, rpc.FETCH_SNAPSHOT_RESPONSE,
        rpc.SASL_HANDSHAKE_REQUEST, rpc.SASL_HANDSHAKE_RESPONSE, rpc.SASL_AUTHENTICATE_REQUEST,
        rpc.SASL_AUTHENTICATE_RESPONSE)


@pytest.mark.parametrize("schema", RPCS, ids=[s.name for s in RPCS])
def test_observer_rpcs_are_kafkas(schema: StructSchema) -> None:
    kafka = kafka_schemas("kafka-clients", "common/message/")
    assert schema.name in kafka, f"{schema.name} is not in kafka-clients-{KAFKA_VERSION}.jar"
    if schema.cls.API_KEY >= 0:  # the headers have none
        assert kafka[schema.name]["apiKey"] == schema.cls.API_KEY
    assert compare_message(schema, kafka[schema.name], all_versions=False) == []


def test_the_comparison_sees_a_difference() -> None:
    """The comparison is not vacuous: a restated field with another tag, type or default is reported."""
    kafka = kafka_schemas("kafka-metadata", "common/metadata/")["PartitionRecord"]
    good = metadata_types.BY_API_KEY[3]
    changed = [Field(f.name, f.type, f.versions, f.nullable, None if f.tag == 1 else f.tag, f.default, f.until)
               for f in good.fields]
    bad = StructSchema("PartitionRecord", tuple(changed), good.min_version, good.max_version)
    assert any("EligibleLeaderReplicas v2: tag None != Kafka's 1" in p for p in compare_message(bad, kafka))
