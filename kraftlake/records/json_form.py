"""Kafka's JSON form of a record (what `kafka-dump-log --cluster-metadata-decoder` prints as `data`).

Field names are the schema names with the first letter lowercased, uuids are Kafka's base64 text, bytes are
standard base64, nulls are printed. As in Kafka's generated JsonConverter, a field is printed only if the
record version has it, and a tagged field only when it differs from its default. Secrets are redacted by
default, because this form ends up in terminals, log lines and tables.
"""

from __future__ import annotations

import base64
from typing import Any

from kraftlake.records.config_secrecy import is_secret_config
from kraftlake.records.schema import Array, Field, GeneratedRecord, Primitive, StructSchema

REDACTED = "[redacted]"
UNKNOWN_TAGGED_FIELDS = "_unknownTaggedFields"

_SECRET_FIELDS: dict[str, frozenset[str]] = {
    "UserScramCredentialRecord": frozenset({"salt", "stored_key", "server_key"}),
}


def message_to_json(message: Any, version: int, *, redact: bool = True) -> dict[str, Any]:
    """The JSON object (a dict of JSON-ready values) of `message` written at `version`."""
    return _struct_to_json(message.SCHEMA, message, version, redact)


def message_from_json(cls: type[GeneratedRecord], data: dict[str, Any], version: int) -> Any:
    """The message of type `cls` that `data` (an unredacted JSON form at `version`) describes."""
    return _struct_from_json(cls.SCHEMA, data, version)


def _struct_to_json(schema: StructSchema, message: Any, version: int, redact: bool) -> dict[str, Any]:
    secrets = _SECRET_FIELDS.get(schema.name, frozenset()) if redact else frozenset()
    out: dict[str, Any] = {}
    for f in schema.fields:
        if not f.in_version(version):
            continue
        value = getattr(message, f.attr)
        if f.tag is not None and value == f.default_value():
            continue
        if f.attr in secrets and value is not None:
            out[f.json_name] = REDACTED
        else:
            out[f.json_name] = _value_to_json(f.type, value, version, redact)
    if redact and schema.name == "ConfigRecord" and out.get("value") is not None and is_secret_config(
        message.resource_type, message.name
    ):
        out["value"] = REDACTED
    if message.unknown_tagged_fields:
        out[UNKNOWN_TAGGED_FIELDS] = [
            {"tag": tag, "data": base64.b64encode(raw).decode("ascii")} for tag, raw in message.unknown_tagged_fields
        ]
    return out


def _value_to_json(ftype: Any, value: Any, version: int, redact: bool) -> Any:
    if value is None:
        return None
    if isinstance(ftype, StructSchema):
        return _struct_to_json(ftype, value, version, redact)
    if isinstance(ftype, Array):
        return [_value_to_json(ftype.element, item, version, redact) for item in value]
    if ftype.name == "bytes":
        return base64.b64encode(value).decode("ascii")
    return value


def _struct_from_json(schema: StructSchema, data: dict[str, Any], version: int) -> Any:
    values = {}
    for f in schema.fields:
        if f.in_version(version) and f.json_name in data:
            values[f.attr] = _value_from_json(f, f.type, data[f.json_name], version)
    unknown = tuple(
        (entry["tag"], base64.b64decode(entry["data"])) for entry in data.get(UNKNOWN_TAGGED_FIELDS, ())
    )
    return schema.cls(**values, unknown_tagged_fields=unknown)


def _value_from_json(f: Field, ftype: Any, value: Any, version: int) -> Any:
    if value is None:
        return None
    if isinstance(ftype, StructSchema):
        return _struct_from_json(ftype, value, version)
    if isinstance(ftype, Array):
        return tuple(_value_from_json(f, ftype.element, item, version) for item in value)
    if isinstance(ftype, Primitive) and ftype.name == "bytes":
        if value == REDACTED:
            raise ValueError(f"{f.json_name} was redacted: a redacted JSON form cannot be read back")
        return base64.b64decode(value)
    if isinstance(ftype, Primitive) and ftype.name == "float64":
        return float(value)
    return value
