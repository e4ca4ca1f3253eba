"""Message schemas (Kafka's generator JSON, restated as Python) and the codecs generated from them.

Each struct schema becomes an immutable NamedTuple class with snake_case attributes and one extra field,
`unknown_tagged_fields`, a tuple of `(tag, raw bytes)` kept so that a record written by a newer or forked
Kafka re-encodes byte for byte. For every (schema, version) a decoder and an encoder are generated as
straight-line Python source and compiled once: interpreting the schema per field would be several times
slower, and decode speed decides how fast a 1M-partition log replays.
"""

from __future__ import annotations

import re
import struct
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from kraftlake.records import wire

# -- field types --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Primitive:
    """A fixed-width or compact variable-width scalar."""

    name: str
    size: int  # 0 for variable width


BOOL = Primitive("bool", 1)
INT8 = Primitive("int8", 1)
INT16 = Primitive("int16", 2)
UINT16 = Primitive("uint16", 2)
INT32 = Primitive("int32", 4)
INT64 = Primitive("int64", 8)
FLOAT64 = Primitive("float64", 8)
UUID = Primitive("uuid", 16)
STRING = Primitive("string", 0)
BYTES = Primitive("bytes", 0)  # also Kafka's "records" type (a Fetch response's record set): raw bytes
# An int16-length string even in flexible versions (Kafka's `"flexibleVersions": "none"` on a field: the request
# header's ClientId, so that any broker can read who is asking before it knows the API's format).
LEGACY_STRING = Primitive("legacy_string", 0)

_FIXED_FORMAT = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q", "float64": "d"}
_ZERO = {"bool": False, "int8": 0, "int16": 0, "uint16": 0, "int32": 0, "int64": 0, "float64": 0.0,
         "uuid": wire.ZERO_UUID, "string": "", "bytes": b"", "legacy_string": ""}


@dataclass(frozen=True)
class Array:
    element: Any  # Primitive or StructSchema


@dataclass(frozen=True)
class Field:
    """One schema field. `versions`/`nullable` are the N of Kafka's "N+" ranges (None: never nullable);
    `until` is the M of a closed range "N-M" (a field a later version dropped, e.g. Fetch's ReplicaId)."""

    name: str
    type: Any
    versions: int = 0
    nullable: int | None = None
    tag: int | None = None
    default: Any = "<zero>"
    until: int | None = None

    @property
    def attr(self) -> str:
        return snake_case(self.name)

    @property
    def json_name(self) -> str:
        return self.name[0].lower() + self.name[1:]

    def default_value(self) -> Any:
        if self.default != "<zero>":
            return self.default
        if isinstance(self.type, Array):
            return ()
        if isinstance(self.type, StructSchema):
            return self.type.cls()
        return _ZERO[self.type.name]

    def in_version(self, version: int) -> bool:
        return version >= self.versions and (self.until is None or version <= self.until)

    def nullable_in(self, version: int) -> bool:
        return self.nullable is not None and version >= self.nullable


class GeneratedRecord(Protocol):
    """What a class generated from a schema has for certain (see the `.pyi` stubs for each one's fields)."""

    SCHEMA: ClassVar[StructSchema]


@dataclass(eq=False)
class StructSchema:
    """A message or a nested struct. Building it generates its NamedTuple class.

    `flexible_from` is the first flexible version (tagged fields, compact lengths); the metadata records are
    flexible from 0. Below it only fixed-width fields and legacy strings are generated (the request and
    response headers' old versions): no message here is used at a non-flexible version."""

    name: str
    fields: tuple[Field, ...]
    min_version: int = 0
    max_version: int = 0
    flexible_from: int = 0
    cls: Any = field(init=False)  # a class generated here: its static types are in the `.pyi` stubs
    _codecs: dict[int, tuple[Callable, Callable]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        attrs = [f.attr for f in self.fields] + ["unknown_tagged_fields"]
        defaults = [f.default_value() for f in self.fields] + [()]
        self.cls = _build_named_tuple(self.name, attrs, defaults=defaults)
        self.cls.SCHEMA = self
        self.cls.__doc__ = f"Kafka {self.name} (versions {self.min_version}-{self.max_version})."

    def codec(self, version: int) -> tuple[Callable[[bytes, int], tuple[Any, int]], Callable]:
        """(decode(buf, pos) -> (message, pos), encode(message, out: bytearray)) for one version."""
        codec = self._codecs.get(version)
        if codec is None:
            codec = self._codecs[version] = _generate(self, version)
        return codec


# namedtuple called with names known only at run time (checkers expect a literal class declaration)
_build_named_tuple: Callable[..., Any] = namedtuple


def snake_case(name: str) -> str:
    name = name.replace("KRaft", "Kraft")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def upper_snake_case(name: str) -> str:
    return snake_case(name).upper()


# -- code generation ----------------------------------------------------------------------------------


class _Source:
    """Accumulates indented lines of generated Python."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"


_UUID_CACHE: dict[bytes, str] = {}
_UUID_CACHE_LIMIT = 1 << 16


def _uuid_new(raw: bytes) -> str:
    """The text of a uuid missing from the cache. A metadata log repeats few distinct ids (topic ids, log
    directories), so decoders look them up first: base64 per id was a quarter of the decode time."""
    if len(raw) != 16:
        raise ValueError("uuid runs past the end")
    if len(_UUID_CACHE) >= _UUID_CACHE_LIMIT:
        _UUID_CACHE.clear()
    text = _UUID_CACHE[bytes(raw)] = wire.uuid_to_text(raw)
    return text


_UUIDS_CACHE: dict[bytes, tuple[str, ...]] = {}


def _uuids_new(raw: bytes) -> tuple[str, ...]:
    """The texts of an array of uuids missing from its cache: the same directories arrays recur (one per
    replica set), so whole arrays are cached too."""
    if len(_UUIDS_CACHE) >= _UUID_CACHE_LIMIT:
        _UUIDS_CACHE.clear()
    texts = _UUIDS_CACHE[bytes(raw)] = tuple(
        _UUID_CACHE.get(raw[i : i + 16]) or _uuid_new(raw[i : i + 16]) for i in range(0, len(raw), 16)
    )
    return texts


_SHORT_ARRAY = 64  # compact lengths up to this (arrays of up to 63 items) unpack with a prebuilt Struct

_NAMESPACE: dict[str, Any] = {
    "_uvarint": wire.read_uvarint,
    "_w_uvarint": wire.write_uvarint,
    "_uuid_get": _UUID_CACHE.get,
    "_uuid_new": _uuid_new,
    "_uuid_raw": wire.uuid_from_text,
    "_unpack": struct.unpack_from,
    "_pack": struct.pack,
    "_new": tuple.__new__,
    "_MAXSTR": wire.MAX_STRING_LENGTH,
    # indexed by the compact length (count + 1) of a short array
    **{
        f"_arr_{name}": (None, None, *(struct.Struct(">" + code * n).unpack_from for n in range(1, _SHORT_ARRAY)))
        for name, code in _FIXED_FORMAT.items()
    },
    "_uuids_get": _UUIDS_CACHE.get,
    "_uuids_new": _uuids_new,
}
_UNPACKERS: dict[str, str] = {}  # struct format -> name of its unpack_from in _NAMESPACE


def _decode_fixed(src: _Source, run: list[tuple[Primitive, str]]) -> None:
    """Emit code that reads consecutive fixed-width values (one struct call) into their targets."""
    fmt = ">" + "".join("16s" if ftype.name == "uuid" else _FIXED_FORMAT[ftype.name] for ftype, _ in run)
    name = _UNPACKERS.get(fmt)
    if name is None:
        name = _UNPACKERS[fmt] = f"_unpack{len(_UNPACKERS)}"
        _NAMESPACE[name] = struct.Struct(fmt).unpack_from
    targets = [f"{target}_raw" if ftype.name == "uuid" else target for ftype, target in run]
    src.emit(f"{', '.join(targets)}, = {name}(buf, pos)")
    src.emit(f"pos += {struct.calcsize(fmt)}")
    for ftype, target in run:
        if ftype.name == "uuid":
            src.emit(f"{target} = _uuid_get({target}_raw) or _uuid_new({target}_raw)")


def _decode_value(src: _Source, ftype: Any, target: str, version: int, nullable: bool, context: str) -> None:
    """Emit code that reads one value of `ftype` at `pos` into `target`, advancing `pos`."""
    if isinstance(ftype, Primitive) and ftype.size:
        _decode_fixed(src, [(ftype, target)])
        return
    if ftype is LEGACY_STRING:
        _decode_legacy_string(src, target, nullable, context)
        return
    if isinstance(ftype, StructSchema):  # a struct field (tagged: Fetch's CurrentLeader, SnapshotId, ...)
        name = f"_struct_{id(ftype)}_{version}"
        _NAMESPACE[name] = ftype.codec(version)[0]
        src.emit(f"{target}, pos = {name}(buf, pos)")
        return
    length = src.fresh("n")
    depth = src.depth
    src.emit(f"{length} = buf[pos]")
    # Fast paths for the usual shapes (one-byte length, not null), then the general code.
    if isinstance(ftype, Primitive):  # string or bytes
        src.emit(f"if 0 < {length} < 128:")
        src.emit(f"    end = pos + {length}")
        src.emit(f"    if end > len(buf): raise ValueError('{context} runs past the end')")
        convert = "str({}, 'utf-8')" if ftype.name == "string" else "bytes({})"
        src.emit(f"    {target} = {convert.format('buf[pos + 1:end]')}")
        src.emit("    pos = end")
        src.emit("else:")
        src.depth += 1
    elif isinstance(ftype.element, Primitive) and ftype.element.name == "uuid":
        src.emit(f"if 1 < {length} < 128:")
        src.emit(f"    end = pos + {length} * 16 - 15")
        src.emit(f"    if end > len(buf): raise ValueError('{context} runs past the end')")
        src.emit("    raw = buf[pos + 1:end]")
        src.emit(f"    {target} = _uuids_get(raw) or _uuids_new(raw)")
        src.emit("    pos = end")
        src.emit(f"elif {length} == 1:")
        src.emit(f"    {target} = ()")
        src.emit("    pos += 1")
        src.emit("else:")
        src.depth += 1
    elif isinstance(ftype.element, Primitive) and ftype.element.size:
        element = ftype.element
        src.emit(f"if 1 < {length} <= {_SHORT_ARRAY}:")
        src.emit(f"    {target} = _arr_{element.name}[{length}](buf, pos + 1)")
        src.emit(f"    pos += {length} * {element.size} - {element.size - 1}")
        src.emit(f"elif {length} == 1:")
        src.emit(f"    {target} = ()")
        src.emit("    pos += 1")
        src.emit("else:")
        src.depth += 1
    fast = src.depth > depth
    src.emit(f"if {length} < 128: pos += 1")
    src.emit(f"else: {length}, pos = _uvarint(buf, pos)")
    src.emit(f"if {length} == 0:")
    if nullable:
        src.emit(f"    {target} = None")
    else:
        src.emit(f"    raise ValueError('non-nullable field {context} was serialized as null')")
    src.emit("else:")
    src.depth += 1
    src.emit(f"{length} -= 1")
    if isinstance(ftype, Primitive):  # string or bytes
        src.emit(f"end = pos + {length}")
        src.emit(f"if end > len(buf): raise ValueError('{context} runs past the end')")
        if ftype.name == "string":
            src.emit(f"if {length} > _MAXSTR: raise ValueError('string {context} is too long')")
            src.emit(f"{target} = str(buf[pos:end], 'utf-8')")
        else:
            src.emit(f"{target} = bytes(buf[pos:end])")
        src.emit("pos = end")
    elif isinstance(ftype.element, Primitive) and ftype.element.size and ftype.element.name != "uuid":
        element = ftype.element  # a long array: the short ones took the fast path
        src.emit(f"{target} = _unpack('>%d{_FIXED_FORMAT[element.name]}' % {length}, buf, pos)")
        src.emit(f"pos += {length} * {element.size}")
    elif isinstance(ftype.element, Primitive) and ftype.element.name == "uuid":
        items = src.fresh("items")
        src.emit(f"{items} = []")
        src.emit(f"for q in range(pos, pos + {length} * 16, 16):")
        src.emit("    raw = buf[q:q + 16]")
        src.emit(f"    {items}.append(_uuid_get(raw) or _uuid_new(raw))")
        src.emit(f"{target} = tuple({items})")
        src.emit(f"pos += {length} * 16")
    else:
        items = src.fresh("items")
        item = src.fresh("item")
        src.emit(f"{items} = []")
        src.emit(f"for _ in range({length}):")
        src.depth += 1
        if isinstance(ftype.element, StructSchema):
            src.emit(f"{item}, pos = _struct_{id(ftype.element)}_{version}(buf, pos)")
            _NAMESPACE[f"_struct_{id(ftype.element)}_{version}"] = ftype.element.codec(version)[0]
        else:
            _decode_value(src, ftype.element, item, version, False, context)
        src.emit(f"{items}.append({item})")
        src.depth -= 1
        src.emit(f"{target} = tuple({items})")
    src.depth -= 2 if fast else 1


def _decode_legacy_string(src: _Source, target: str, nullable: bool, context: str) -> None:
    """Emit code that reads an int16-length string (-1: null)."""
    length = src.fresh("n")
    src.emit(f"{length}, = _unpack('>h', buf, pos)")
    src.emit("pos += 2")
    src.emit(f"if {length} < 0:")
    if nullable:
        src.emit(f"    {target} = None")
    else:
        src.emit(f"    raise ValueError('non-nullable field {context} was serialized as null')")
    src.emit("else:")
    src.emit(f"    end = pos + {length}")
    src.emit(f"    if end > len(buf): raise ValueError('{context} runs past the end')")
    src.emit(f"    {target} = str(buf[pos:end], 'utf-8')")
    src.emit("    pos = end")


def _legacy_string_array(ftype: Any) -> bool:
    """An array of legacy strings: below the flexible versions an int32 count, then int16-length strings
    (SaslHandshakeResponse's Mechanisms)."""
    return isinstance(ftype, Array) and ftype.element is LEGACY_STRING


def _decode_legacy_string_array(src: _Source, target: str, context: str) -> None:
    count, item = src.fresh("n"), src.fresh("s")
    src.emit(f"{count}, = _unpack('>i', buf, pos)")
    src.emit("pos += 4")
    src.emit(f"{target} = []")
    src.emit(f"for _ in range({count}):")
    src.depth += 1
    _decode_legacy_string(src, item, False, context)
    src.emit(f"{target}.append({item})")
    src.depth -= 1
    src.emit(f"{target} = tuple({target})")


def _encode_legacy_string_array(src: _Source, expr: str, context: str) -> None:
    items = src.fresh("a")
    src.emit(f"{items} = {expr}")
    src.emit(f"out += _pack('>i', len({items}))")
    src.emit(f"for {items}_item in {items}:")
    src.depth += 1
    _encode_legacy_string(src, f"{items}_item", False, context)
    src.depth -= 1


def _encode_legacy_string(src: _Source, expr: str, nullable: bool, context: str) -> None:
    value = src.fresh("v")
    src.emit(f"{value} = {expr}")
    src.emit(f"if {value} is None:")
    null = "out += b'\\xff\\xff'" if nullable else f"raise ValueError('non-nullable field {context} is None')"
    src.emit(f"    {null}")
    src.emit("else:")
    src.emit(f"    {value} = {value}.encode('utf-8')")
    src.emit(f"    out += _pack('>h', len({value}))")
    src.emit(f"    out += {value}")


def _encode_value(src: _Source, ftype: Any, expr: str, version: int, nullable: bool, context: str) -> None:
    """Emit code that appends the encoding of `expr` to `out`."""
    if ftype is LEGACY_STRING:
        _encode_legacy_string(src, expr, nullable, context)
        return
    if isinstance(ftype, Primitive) and ftype.size:
        if ftype.name == "uuid":
            src.emit(f"out += _uuid_raw({expr})")
        else:
            src.emit(f"out += _pack('>{_FIXED_FORMAT[ftype.name]}', {expr})")
        return
    if isinstance(ftype, StructSchema):
        src.emit(f"_enc_struct_{id(ftype)}_{version}({expr}, out)")
        _NAMESPACE[f"_enc_struct_{id(ftype)}_{version}"] = ftype.codec(version)[1]
        return
    value = src.fresh("v")
    src.emit(f"{value} = {expr}")
    src.emit(f"if {value} is None:")
    if nullable:
        src.emit("    out.append(0)")
    else:
        src.emit(f"    raise ValueError('non-nullable field {context} is None')")
    src.emit("else:")
    src.depth += 1
    if isinstance(ftype, Primitive):
        raw = src.fresh("raw")
        src.emit(f"{raw} = {value}.encode('utf-8')" if ftype.name == "string" else f"{raw} = {value}")
        src.emit(f"_w_uvarint(out, len({raw}) + 1)")
        src.emit(f"out += {raw}")
    else:
        src.emit(f"_w_uvarint(out, len({value}) + 1)")
        element = ftype.element
        if isinstance(element, Primitive) and element.size and element.name != "uuid":
            src.emit(f"out += _pack('>%d{_FIXED_FORMAT[element.name]}' % len({value}), *{value})")
        else:
            item = src.fresh("item")
            src.emit(f"for {item} in {value}:")
            src.depth += 1
            _encode_value(src, element, item, version, False, context)
            src.depth -= 1
    src.depth -= 1


def _generate(schema: StructSchema, version: int) -> tuple[Callable, Callable]:
    present = [f for f in schema.fields if f.in_version(version)]
    untagged = [f for f in present if f.tag is None]
    tagged = sorted((f for f in present if f.tag is not None), key=lambda f: f.tag or 0)
    flexible = version >= schema.flexible_from
    if not flexible:
        _check_non_flexible(schema, version, present)
    invalid_tags = sorted({f.tag for f in schema.fields if f.tag is not None} - {f.tag for f in tagged})
    cls_name = f"_cls_{id(schema)}"
    _NAMESPACE[cls_name] = schema.cls

    dec = _Source()
    if not schema.fields and flexible:  # NoOpRecord, EndTransactionRecord: one shared instance unless tags were written
        _NAMESPACE[f"_empty_{id(schema)}"] = schema.cls()
        dec.emit(f"if buf[pos] == 0: return _empty_{id(schema)}, pos + 1")
    run: list[tuple[Primitive, str]] = []  # consecutive fixed-width fields, read with one struct call
    for f in untagged:
        if isinstance(f.type, Primitive) and f.type.size:
            run.append((f.type, f.attr))
            continue
        if run:
            _decode_fixed(dec, run)
            run = []
        if not flexible and _legacy_string_array(f.type):
            _decode_legacy_string_array(dec, f.attr, f"{schema.name}.{f.name}")
            continue
        _decode_value(dec, f.type, f.attr, version, f.nullable_in(version), f"{schema.name}.{f.name}")
    if run:
        _decode_fixed(dec, run)
    absent = [f for f in schema.fields if f not in untagged]
    if absent:  # one tuple unpack: cheaper than a global lookup per field
        _NAMESPACE[f"_defaults_{id(schema)}_{version}"] = tuple(f.default_value() for f in absent)
        dec.emit(f"{''.join(f'{f.attr}, ' for f in absent)}= _defaults_{id(schema)}_{version}")
    dec.emit("unknown = ()")
    if flexible:
        _decode_tags(dec, schema, version, tagged, invalid_tags)
    args = "".join(f"{f.attr}, " for f in schema.fields)
    dec.emit(f"return _new({cls_name}, ({args}unknown,)), pos")  # tuple.__new__: skips the NamedTuple's __new__

    enc = _Source()
    for f in untagged:
        if not flexible and _legacy_string_array(f.type):
            _encode_legacy_string_array(enc, f"msg.{f.attr}", f"{schema.name}.{f.name}")
            continue
        _encode_value(enc, f.type, f"msg.{f.attr}", version, f.nullable_in(version), f"{schema.name}.{f.name}")
    if flexible:
        _encode_tags(enc, schema, version, tagged)
    else:
        enc.emit("pass")

    stem = f"{schema.name}_v{version}"
    source = (
        f"def decode_{stem}(buf, pos):\n" + "\n".join(dec.lines) + "\n\n"
        f"def encode_{stem}(msg, out):\n" + "\n".join(enc.lines) + "\n"
    )
    namespace = dict(_NAMESPACE)
    exec(compile(source, f"<records.schema {stem}>", "exec"), namespace)
    return namespace[f"decode_{stem}"], namespace[f"encode_{stem}"]


def _decode_tags(
    dec: _Source, schema: StructSchema, version: int, tagged: list[Field], invalid_tags: list[int]
) -> None:
    """Emit the tagged-field section's decoder: known tags into their fields, unknown ones kept raw. Its locals
    start with an underscore: a field may be called `size` (FetchSnapshot's)."""
    dec.emit("_ntags = buf[pos]")
    dec.emit("if _ntags < 128: pos += 1")
    dec.emit("else: _ntags, pos = _uvarint(buf, pos)")
    dec.emit("for _ in range(_ntags) if _ntags else ():")
    dec.depth += 1
    dec.emit("_tag = buf[pos]")
    dec.emit("_size = buf[pos + 1]")
    dec.emit("if _tag < 128 and _size < 128: pos += 2")
    dec.emit("else:")
    dec.emit("    _tag, pos = _uvarint(buf, pos)")
    dec.emit("    _size, pos = _uvarint(buf, pos)")
    dec.emit("_tag_end = pos + _size")  # a known field checks that it ends there; an unknown one, below
    keyword = "if"
    for f in tagged:
        dec.emit(f"{keyword} _tag == {f.tag}:")
        dec.depth += 1
        _decode_value(dec, f.type, f.attr, version, f.nullable_in(version), f"{schema.name}.{f.name}")
        dec.emit(f"if pos != _tag_end: raise ValueError('tagged field {f.name} has the wrong size')")
        dec.depth -= 1
        keyword = "elif"
    if invalid_tags:
        dec.emit(f"{keyword} _tag in {tuple(invalid_tags)!r}:")
        dec.emit(f"    raise ValueError('tag %d is not valid for {schema.name} version {version}' % _tag)")
        keyword = "elif"
    dec.emit("else:" if keyword == "elif" else "if True:")
    dec.emit("    if _tag_end > len(buf): raise ValueError('tagged field runs past the end')")
    dec.emit("    unknown += ((_tag, bytes(buf[pos:_tag_end])),)")
    dec.emit("    pos = _tag_end")
    dec.depth -= 1


def _encode_tags(enc: _Source, schema: StructSchema, version: int, tagged: list[Field]) -> None:
    """Emit the tagged-field section's encoder: fields that differ from their default, and the kept unknowns."""
    enc.emit("tags = []")
    for f in tagged:
        default = f.default_value()
        if default is None:
            enc.emit(f"if msg.{f.attr} is not None:")
        elif default == ():
            enc.emit(f"if msg.{f.attr}:")
        elif isinstance(f.type, StructSchema):  # a struct is written unless it equals its default
            _NAMESPACE[f"_tag_default_{id(f)}"] = default
            enc.emit(f"if msg.{f.attr} != _tag_default_{id(f)}:")
        else:
            enc.emit(f"if msg.{f.attr} != {default!r}:")
        enc.depth += 1
        enc.emit("outer, out = out, bytearray()")
        _encode_value(enc, f.type, f"msg.{f.attr}", version, f.nullable_in(version), f"{schema.name}.{f.name}")
        enc.emit(f"tags.append(({f.tag}, bytes(out)))")
        enc.emit("out = outer")
        enc.depth -= 1
    enc.emit("if msg.unknown_tagged_fields:")
    enc.emit("    tags.extend(msg.unknown_tagged_fields)")
    enc.emit("    tags.sort(key=lambda t: t[0])")
    enc.emit("_w_uvarint(out, len(tags))")
    enc.emit("for tag, raw in tags:")
    enc.emit("    _w_uvarint(out, tag)")
    enc.emit("    _w_uvarint(out, len(raw))")
    enc.emit("    out += raw")


def _check_non_flexible(schema: StructSchema, version: int, present: list[Field]) -> None:
    """Below its flexible versions a message is generated only when every field has the same encoding in
    both formats: fixed-width fields, legacy strings and arrays of them, no tags."""
    for f in present:
        fixed = isinstance(f.type, Primitive) and f.type.size
        if f.tag is not None or not (f.type is LEGACY_STRING or fixed or _legacy_string_array(f.type)):
            raise ValueError(
                f"{schema.name} version {version} is not flexible: its field {f.name} has no non-flexible codec here"
            )


def nested(name: str, *fields: Field) -> StructSchema:
    """A nested struct type (array element or struct field)."""
    return StructSchema(name, tuple(fields))
