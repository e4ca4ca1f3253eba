"""KRaftVersion and KRaftVoters control records (KIP-853) in the `voters` sub-image: published with their
control batch (each batch is a commit), inside an open metadata transaction with its End, never undone by an
Abort, loaded from snapshots, and recorded as row versions at the offset of the image that publishes them."""

from __future__ import annotations

from kraftlake.image_schema.changes import ChangeRecorder, RowVersion
from kraftlake.image_schema.tables import TABLES
from kraftlake.records import SnapshotId
from kraftlake.records.snapshot_file import snapshot_batches as file_batches
from kraftlake.replay.canonical import canonical_sections
from kraftlake.replay.loader import BatchLoader
from kraftlake.replay.voters import QuorumVoter, VoterEndpoint
from kraftlake.replay.writer import image_records, snapshot_batches
from tests.replay.builders import KV, MV, VOTERS, A, B, E, N, Recorder, T, control, data, uuid


def voter(n: int) -> QuorumVoter:
    return QuorumVoter(n, uuid(400 + n), (VoterEndpoint("CONTROLLER", f"c{n}", 9093),), 0, 1)


def voter_ids(loader: BatchLoader) -> list[int]:
    assert loader.published is not None
    return list(loader.published.voters.voters)


def test_a_voter_change_is_published_with_its_control_batch_and_not_before() -> None:
    loader = BatchLoader(Recorder())
    loader.load_commit(control(0, 1, 10, [KV(1), VOTERS(1, 2, 3)]))
    loader.load_commit(data(2, 1, 10, [MV(21), T("a")]))
    image = loader.image
    assert image.voters.kraft_version == 1
    assert dict(image.voters.voters) == {1: voter(1), 2: voter(2), 3: voter(3)}
    loader.load_commit(data(4, 1, 10, [N()]))
    assert voter_ids(loader) == [1, 2, 3]  # offset 4: still the old set
    loader.load_commit(control(5, 1, 10, [VOTERS(1, 2, 3, 4)]))
    assert voter_ids(loader) == [1, 2, 3, 4]
    assert loader.published is not None and loader.published.provenance.offset == 5
    assert loader.published.topics.by_name.get("a") is not None  # nothing else changed


def test_inside_a_transaction_the_change_is_published_at_its_end_and_survives_the_abort() -> None:
    loader = BatchLoader(Recorder())
    loader.load_commit(control(0, 1, 10, [KV(1), VOTERS(1, 2, 3)]))
    loader.load_commit(data(2, 1, 10, [MV(21), B(), T("x")]))
    loader.load_commit(control(5, 1, 10, [VOTERS(1, 2)]))  # the Raft layer appends between the records
    assert voter_ids(loader) == [1, 2, 3], "a transaction is open: nothing is published"
    loader.load_commit(data(6, 1, 10, [A()]))
    assert voter_ids(loader) == [1, 2] and loader.image.topics.by_name.get("x") is None
    loader.load_commit(data(7, 1, 10, [B(), T("y")]))
    loader.load_commit(control(9, 1, 10, [KV(1)]))
    loader.load_commit(data(10, 1, 10, [E()]))
    assert list(loader.image.voters.voters) == [1, 2] and loader.image.topics.by_name.get("y") is not None


def voter_values(n: int) -> tuple:
    """Voter n's row in the voters table, column by column."""
    return (n, uuid(400 + n), [{"name": "CONTROLLER", "host": f"c{n}", "port": 9093}], 0, 1)


def test_row_versions_carry_the_offsets_of_the_images_that_publish_them() -> None:
    """Before the first metadata record nothing is published: the quorum's rows start with the first image
    (offset 2, published before the Begin); a change inside the transaction with its End's batch (6)."""
    recorder = ChangeRecorder()
    loader = BatchLoader(None, observer=recorder)
    loader.load_commit(control(0, 1, 10, [KV(1), VOTERS(1, 2, 3)]))
    loader.load_commit(data(2, 1, 10, [MV(21), B(), T("x")]))
    loader.load_commit(control(5, 1, 10, [VOTERS(1, 3, 4)]))
    loader.load_commit(data(6, 1, 10, [E()]))
    versions = sorted((v for v in recorder.take() if v.table in ("voters", "kraft_version")), key=repr)
    assert versions == sorted([
        RowVersion("kraft_version", ("quorum",), ("quorum", 1), 2),
        *(RowVersion("voters", (n,), voter_values(n), 2) for n in (1, 2, 3)),
        RowVersion("voters", (2,), None, 6),
        RowVersion("voters", (4,), voter_values(4), 6),
    ], key=repr)
    assert loader.published is not None
    assert sorted(TABLES["voters"].image_rows(loader.published)) == [
        ((n,), voter_values(n)) for n in (1, 3, 4)
    ]


def test_a_snapshot_carries_the_quorum_state_and_one_without_drops_it() -> None:
    loader = BatchLoader(Recorder())
    loader.load_commit(control(0, 1, 10, [KV(1), VOTERS(1, 2)]))
    loader.load_commit(data(2, 1, 10, [MV(21), T("a")]))
    written = snapshot_batches(loader.image, 0)
    header = written[0].records
    assert [type(r.message).__name__ for r in header] == ["SnapshotHeaderRecord", "KRaftVersionRecord", "VotersRecord"]
    fresh = BatchLoader(Recorder())
    fresh.load_snapshot(written, SnapshotId(4, 1))
    assert fresh.image.voters == loader.image.voters
    assert canonical_sections(fresh.image)["quorum"] == canonical_sections(loader.image)["quorum"] == {
        "kraftVersion": 1,
        "voters": {str(n): {"voterId": n, "directoryId": uuid(400 + n),
                            "endpoints": [{"name": "CONTROLLER", "host": f"c{n}", "port": 9093}],
                            "minSupportedKraftVersion": 0, "maxSupportedKraftVersion": 1} for n in (1, 2)},
    }
    static = file_batches(1, image_records(loader.image).records, 0, 0)  # kraft.version 0: no quorum records
    fresh.load_snapshot(static, SnapshotId(4, 1))
    assert fresh.image.voters.is_empty() and fresh.image.topics.by_name.get("a") is not None


def test_quorum_records_alone_leave_the_log_in_need_of_its_bootstrap() -> None:
    """The controller bootstraps a log with no metadata record yet: the KRaftVersion + Voters records the
    first leader of a kraft.version 1 quorum writes must not count as metadata (else no metadata.version)."""
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(control(0, 1, 10, [KV(1), VOTERS(1, 2, 3)]))
    loader.flush()
    assert not loader.has_seen_record and loader.image.metadata_is_empty() and not loader.image.is_empty()
    assert len(recorder) == 0  # nothing published before metadata, as Kafka publishes nothing either
    loader.load_batch(data(2, 1, 10, [MV(21)]))
    loader.flush()
    assert list(recorder.latest.image.voters.voters) == [1, 2, 3] and recorder.latest.image.features.metadata_version
