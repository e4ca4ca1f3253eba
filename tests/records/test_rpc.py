"""The generated RPC codecs (`kraftlake.records.rpc`): every restated version round-trips, tagged fields and nulls
included, and a response that does not parse names the endpoint and the API."""

from __future__ import annotations

import pytest

from kraftlake.records import rpc
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.rpc_frames import decode_response, encode_request, response_header_version
from kraftlake.records.schema import StructSchema

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
DIRECTORY = "b3Bfb2JzZXJ2ZXJfZGlyAA"


def _fetch_response(version: int) -> object:
    partition = rpc.PartitionData(
        partition_index=0, error_code=0, high_watermark=42, last_stable_offset=42, log_start_offset=7,
        diverging_epoch=rpc.EpochEndOffset(3, 30), current_leader=rpc.LeaderIdAndEpoch(2, 4),
        snapshot_id=rpc.FetchSnapshotId(20, 3), aborted_transactions=None, records=b"\x00" * 61,
    )
    topic = rpc.FetchableTopicResponse(
        topic="__cluster_metadata" if version <= 12 else "",
        topic_id=TOPIC_ID if version >= 13 else rpc.FetchableTopicResponse().topic_id,
        partitions=(partition,),
    )
    endpoints = (rpc.FetchNodeEndpoint(2, "127.0.0.1", 9093, None),) if version >= 16 else ()
    return rpc.FetchResponse(throttle_time_ms=1, responses=(topic,), node_endpoints=endpoints)


def _fetch_request(version: int) -> object:
    partition = rpc.FetchPartition(
        partition=0, current_leader_epoch=4, fetch_offset=100, last_fetched_epoch=3, partition_max_bytes=1 << 20,
        replica_directory_id=DIRECTORY if version >= 17 else rpc.FetchPartition().replica_directory_id,
    )
    topic = rpc.FetchTopic(topic="" if version >= 13 else "__cluster_metadata",
                           topic_id=TOPIC_ID if version >= 13 else rpc.FetchTopic().topic_id, partitions=(partition,))
    return rpc.FetchRequest(cluster_id="cluster-1", max_wait_ms=500, min_bytes=1, topics=(topic,))


def _snapshot_response(version: int) -> object:
    partition = rpc.SnapshotPartitionResponse(
        index=0, snapshot_id=rpc.RequestedSnapshotId(20, 3), current_leader=rpc.SnapshotLeader(1, 3), size=500,
        position=100, unaligned_records=b"abc",
    )
    endpoints = (rpc.SnapshotNodeEndpoint(1, "localhost", 9093),) if version >= 1 else ()
    return rpc.FetchSnapshotResponse(
        topics=(rpc.SnapshotTopicResponse("__cluster_metadata", (partition,)),), node_endpoints=endpoints
    )


def _api_versions_response(version: int) -> object:
    return rpc.ApiVersionsResponse(
        api_keys=(rpc.ApiVersion(1, 4, 18), rpc.ApiVersion(59, 0, 1)),
        supported_features=(rpc.SupportedFeatureKey("kraft.version", 0, 1),), finalized_features_epoch=9,
        finalized_features=(rpc.FinalizedFeatureKey("metadata.version", 27, 27),),
    )


MESSAGES = {
    rpc.FETCH_REQUEST: _fetch_request,
    rpc.FETCH_RESPONSE: _fetch_response,
    rpc.FETCH_SNAPSHOT_RESPONSE: _snapshot_response,
    rpc.API_VERSIONS_RESPONSE: _api_versions_response,
}


@pytest.mark.parametrize(
    ("schema", "version"),
    [(schema, v) for schema in MESSAGES for v in range(schema.min_version, schema.max_version + 1)],
    ids=lambda x: getattr(x, "name", str(x)),
)
def test_round_trip(schema: StructSchema, version: int) -> None:
    message = MESSAGES[schema](version)
    decode, encode = schema.codec(version)
    out = bytearray()
    encode(message, out)
    decoded, end = decode(bytes(out), 0)
    assert end == len(out)
    assert decoded == message
    again = bytearray()
    encode(decoded, again)
    assert again == out


def test_fields_outside_their_versions_are_not_written() -> None:
    """ReplicaId is in Fetch 12-14 only, ReplicaDirectoryId from 17: the same message differs by version."""
    message = _fetch_request(17)
    decode, encode = rpc.FETCH_REQUEST.codec(14)
    out = bytearray()
    encode(message, out)
    back, _ = decode(bytes(out), 0)
    assert back.topics[0].partitions[0].replica_directory_id == rpc.FetchPartition().replica_directory_id
    assert back.replica_id == -1 and back.cluster_id == "cluster-1"


def test_unknown_tags_are_kept() -> None:
    message = rpc.ApiVersionsResponse(api_keys=(), unknown_tagged_fields=((7, b"\x01\x02"),))
    decode, encode = rpc.API_VERSIONS_RESPONSE.codec(3)
    out = bytearray()
    encode(message, out)
    assert decode(bytes(out), 0)[0].unknown_tagged_fields == ((7, b"\x01\x02"),)


def test_request_frame_has_the_flexible_header_with_a_legacy_client_id() -> None:
    raw = encode_request(rpc.FETCH, 17, 5, "kraftlake", _fetch_request(17))
    # api key, version, correlation id, then ClientId as an int16-length string, then an empty tag section
    assert raw[:8] == b"\x00\x01\x00\x11\x00\x00\x00\x05"
    assert raw[8:10] == b"\x00\x09" and raw[10:19] == b"kraftlake" and raw[19] == 0


def test_response_frame_round_trip_and_header_versions() -> None:
    body = bytearray()
    rpc.FETCH_RESPONSE.codec(17)[1](_fetch_response(17), body)
    raw = b"\x00\x00\x00\x09\x00" + bytes(body)  # ResponseHeader v1: correlation id + empty tag section
    correlation, decoded = decode_response(rpc.FETCH, 17, raw, "127.0.0.1:9093")
    assert correlation == 9 and decoded == _fetch_response(17)
    assert response_header_version(rpc.API_VERSIONS, 3) == 0  # ApiVersions is always answered with v0


@pytest.mark.parametrize("cut", [3, 10, 40])
def test_truncated_response_names_endpoint_and_api(cut: int) -> None:
    body = bytearray()
    rpc.FETCH_RESPONSE.codec(17)[1](_fetch_response(17), body)
    raw = (b"\x00\x00\x00\x09\x00" + bytes(body))[:cut]
    with pytest.raises(RecordFormatError, match=r"^127\.0\.0\.1:9093: Fetch v17 response does not parse"):
        decode_response(rpc.FETCH, 17, raw, "127.0.0.1:9093")


def test_trailing_bytes_are_an_error() -> None:
    body = bytearray()
    rpc.API_VERSIONS_RESPONSE.codec(3)[1](_api_versions_response(3), body)
    with pytest.raises(RecordFormatError, match="ApiVersions v3 response has 2 bytes after its end"):
        decode_response(rpc.API_VERSIONS, 3, b"\x00\x00\x00\x01" + bytes(body) + b"xx", "host:1")


def test_versions_not_restated_are_refused() -> None:
    with pytest.raises(ValueError, match="versions 12-18, not 11"):
        encode_request(rpc.FETCH, 11, 1, "kraftlake", rpc.FetchRequest())
