"""The canonical image JSON: deterministic whatever order built the image, sorted keys, provenance on
request, secrets never printed, replica order kept; the text written from Arrow columns is the text `json`
writes for the same document, and the topics section holds exactly the image's partitions."""

from __future__ import annotations

import json

import pytest

from kraftlake.image_schema import canonical
from kraftlake.image_schema.canonical import canonical_json, tables_chunks
from kraftlake.image_schema.tables import TABLES
from kraftlake.records import metadata_types as mt
from kraftlake.replay.canonical import REDACTED
from kraftlake.replay.fields import camel_case
from kraftlake.replay.image import MetadataImage
from tests.replay.builders import MV, P, T, apply_records, rich_records


def test_the_same_state_reached_in_another_order_prints_the_same() -> None:
    records = rich_records()
    configs = [mt.ConfigRecord(resource_type=2, resource_name=name, name=key, value="1")
               for name in ("orders", "audit") for key in ("b", "a")]
    forward = apply_records([*records, *configs, T("zeta"), T("alpha")])
    backward = apply_records([*records, *reversed(configs), T("alpha"), T("zeta")])
    assert list(forward.topics.by_id) != list(backward.topics.by_id)
    assert canonical_json(forward) == canonical_json(backward)


def test_keys_are_sorted_and_the_compact_and_indented_forms_agree() -> None:
    image = apply_records(rich_records(), offset=9)
    text = canonical_json(image)
    document = json.loads(text)
    assert text == json.dumps(document, sort_keys=True, separators=(",", ":"))
    assert json.loads(canonical_json(image, indent=2)) == document
    assert set(document) == {"provenance", "features", "brokers", "controllers", "topics", "configs", "clientQuotas",
                             "producerIds", "acls", "scramCredentials", "delegationTokens", "quorum"}


def test_provenance_is_a_top_level_key_that_can_be_left_out() -> None:
    early = apply_records([MV(14), T("foo")], offset=3)
    late = apply_records([MV(14), T("foo")], offset=300)
    assert json.loads(canonical_json(early))["provenance"] == {"offset": 3, "epoch": 1, "logTimeMs": 0,
                                                              "batchAligned": True}
    assert canonical_json(early) != canonical_json(late)
    assert canonical_json(early, provenance=False) == canonical_json(late, provenance=False)
    assert "provenance" not in json.loads(canonical_json(early, provenance=False))


def test_secrets_are_never_printed() -> None:
    image = apply_records([
        MV(14),
        mt.UserScramCredentialRecord(name="alice", mechanism=1, salt=b"SALTSALT", stored_key=b"STOREDKEY",
                                     server_key=b"SERVERKEY", iterations=4096),
        mt.ConfigRecord(resource_type=4, resource_name="", name="listener.name.sasl.jaas.config",
                        value="org.apache.kafka.common.security.plain.PlainLoginModule password=hunter2;"),
        mt.ConfigRecord(resource_type=4, resource_name="", name="ssl.keystore.password", value="hunter2"),
        mt.ConfigRecord(resource_type=4, resource_name="", name="log.retention.ms", value="1000"),
    ])
    text = canonical_json(image)
    for secret in ("SALT", "STOREDKEY", "SERVERKEY", "U0FMVFNBTFQ", "hunter2"):
        assert secret not in text
    document = json.loads(text)
    assert document["scramCredentials"] == {"alice:SCRAM-SHA-256": {"iterations": 4096}}
    assert document["configs"]["broker:"] == {"listener.name.sasl.jaas.config": REDACTED,
                                              "ssl.keystore.password": REDACTED, "log.retention.ms": "1000"}


def test_replica_order_is_kept_and_ids_are_stable_keys() -> None:
    image = apply_records([MV(14), T("foo"), P("foo", 3, (3, 1, 2), isr=(2, 3))])
    document = json.loads(canonical_json(image))
    partition = document["topics"]["foo"]["partitions"]["3"]
    assert (partition["replicas"], partition["isr"]) == ([3, 1, 2], [2, 3])
    assert document["features"] == {"metadataVersion": 14, "finalized": {}}
    assert document["producerIds"] == {"nextProducerId": -1}


def test_every_sub_image_appears() -> None:
    document = json.loads(canonical_json(apply_records(rich_records())))
    assert all(document[key] for key in ("brokers", "controllers", "topics", "configs", "clientQuotas", "acls",
                                         "scramCredentials", "delegationTokens"))
    assert document["clientQuotas"] == {"user=alice": {"consumer_byte_rate": 2048.0}}
    assert document["brokers"]["1"]["fenced"] is False


def _awkward_image() -> MetadataImage:
    """Topics out of name order, one without partitions, one with 12 (ids sort as text: "10" < "2"), a name
    json must escape, lists empty and not, on top of every other sub-image."""
    records = [*rich_records(), T("zeta"), T("alpha"), T("empty"), T("caf\u00e9 \"quoted\"")]
    records += [P("zeta", n, (n % 3, (n + 1) % 3), isr=(n % 3,), leader=n % 3) for n in range(12)]
    records += [P("alpha", 0, (2, 1, 0)), P("caf\u00e9 \"quoted\"", 0, (1,), isr=(), leader=-1)]
    return apply_records(records, offset=42)


@pytest.mark.parametrize("indent", [None, 2])
def test_the_text_is_what_json_writes_for_it(indent: int | None) -> None:
    text = canonical_json(_awkward_image(), indent=indent)
    separators = (",", ": ") if indent else (",", ":")
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=indent, separators=separators)


def test_the_topics_section_holds_every_partition_field() -> None:
    """The oracle: the image's own values, every PartitionRegistration field under its camelCase name."""
    image = _awkward_image()
    expected = {
        topic.name: {
            "topicId": topic.topic_id,
            "partitions": {str(pid): {camel_case(field): list(value) if isinstance(value, tuple) else value
                                      for field, value in partition._asdict().items()}
                           for pid, partition in topic.partitions.items()},
        }
        for topic in image.topics.by_id.values()
    }
    assert json.loads(canonical_json(image, indent=2))["topics"] == expected
    assert expected["empty"]["partitions"] == {} and len(expected["zeta"]["partitions"]) == 12


def test_slices_written_on_several_threads_join_into_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [MV(14), *(T(f"t{n:03d}") for n in range(40))]
    records += [P(f"t{n:03d}", p) for n in range(40) for p in range(n % 4 + 1)]
    image = apply_records(records)
    whole = canonical_json(image, indent=2)
    monkeypatch.setattr(canonical, "SLICE_ROWS", 7)
    assert len(canonical._slices(canonical._by_name(canonical._tables(image)["partitions"]))) > 5
    assert canonical_json(image, indent=2) == whole


def test_partitions_already_in_order_are_written_as_those_out_of_order() -> None:
    """A warehouse's rows usually come in the section's order (not sorted again), an image's do not; ties on
    the name are broken by topic id, then by the id's text ("10" before "9")."""
    image = _awkward_image()
    tables = {name: spec.arrow([values for _, values in spec.image_rows(image)]) for name, spec in TABLES.items()}
    partitions = tables["partitions"]
    ordered = canonical._by_name(partitions).drop_columns([canonical._ID_TEXT])
    assert not ordered.equals(partitions)
    assert canonical._in_order(canonical._by_name(ordered), canonical._NAME_ORDER)
    assert not canonical._in_order(canonical._by_name(partitions).take([1, 0]), canonical._NAME_ORDER)
    texts = {order: b"".join(tables_chunks({**tables, "partitions": rows}, image.provenance, indent=2)).decode()
             for order, rows in (("as built", partitions), ("in order", ordered), ("reversed", ordered[::-1]))}
    assert texts["in order"] == texts["as built"] == texts["reversed"] == canonical_json(image, indent=2)
