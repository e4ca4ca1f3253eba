"""Hypothesis strategies for records, derived from the schemas so that every field of every type and
version is exercised: values respect each field's type and its nullability at that version, fields absent
from the version keep their default (what a decoder gives back), and unknown tagged fields use tags the
schema never defines."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from kraftlake.records import control_types, metadata_types, wire
from kraftlake.records.schema import Array, Field, Primitive, StructSchema

_INTS = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
}
UUIDS = st.binary(min_size=16, max_size=16).map(wire.uuid_to_text)
TAG_VALUES = st.one_of(st.integers(0, 40), st.integers(0, 2**31 - 1))

# (schema, version) for every metadata record type and version, and every control type at every version.
METADATA_VERSIONS = [(s, v) for s in metadata_types.SCHEMAS for v in range(s.min_version, s.max_version + 1)]
CONTROL_VERSIONS = [(s, v) for s in control_types.SCHEMAS for v in range(s.min_version, s.max_version + 1)]


def primitive(ptype: Primitive) -> st.SearchStrategy[Any]:
    if ptype.name in _INTS:
        return _INTS[ptype.name]
    if ptype.name == "bool":
        return st.booleans()
    if ptype.name == "float64":
        return st.floats(allow_nan=False)
    if ptype.name == "uuid":
        return UUIDS
    if ptype.name == "string":
        return st.text(max_size=20)
    return st.binary(max_size=40)


def value(ftype: Any, version: int) -> st.SearchStrategy[Any]:
    if isinstance(ftype, StructSchema):
        return message(ftype, version)
    if isinstance(ftype, Array):
        return st.lists(value(ftype.element, version), max_size=4).map(tuple)
    return primitive(ftype)


def field_value(f: Field, version: int) -> st.SearchStrategy[Any]:
    if not f.in_version(version):
        return st.just(f.default_value())
    base = value(f.type, version)
    if f.tag is not None:
        base = st.one_of(st.just(f.default_value()), base)  # tagged fields are often left at their default
    return st.one_of(st.none(), base) if f.nullable_in(version) else base


def unknown_tagged_fields(schema: StructSchema) -> st.SearchStrategy[tuple[tuple[int, bytes], ...]]:
    """Sorted unique tags the schema does not define (in any version), with random payloads."""
    known = {f.tag for f in schema.fields if f.tag is not None}
    tags = st.lists(TAG_VALUES.filter(lambda tag: tag not in known), max_size=3, unique=True)
    return tags.flatmap(
        lambda chosen: st.tuples(*(st.tuples(st.just(t), st.binary(max_size=12)) for t in sorted(chosen)))
    )


def message(schema: StructSchema, version: int) -> st.SearchStrategy[Any]:
    fields = {f.attr: field_value(f, version) for f in schema.fields}
    return st.builds(schema.cls, **fields, unknown_tagged_fields=unknown_tagged_fields(schema))


def metadata_record() -> st.SearchStrategy[tuple[Any, int]]:
    """(message, version) of any metadata record type at any of its versions."""
    return st.sampled_from(METADATA_VERSIONS).flatmap(lambda sv: st.tuples(message(*sv), st.just(sv[1])))


def control_record() -> st.SearchStrategy[Any]:
    """A control message at the version KRaft writes control records at."""
    return st.sampled_from(control_types.SCHEMAS).flatmap(
        lambda schema: message(schema, control_types.CONTROL_VALUE_VERSION)
    )
