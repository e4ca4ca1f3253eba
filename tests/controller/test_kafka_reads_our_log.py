"""Kafka reads what our quorum writes: three `kraftlake controller start` processes on loopback, a mixed
workload from `kraftlake simulate` (brokers, topics, partitions, configs, ACLs, quotas, SCRAM users, ISR
churn), snapshots taken on the way; then the leader's `__cluster_metadata-0` directory is read by Apache
Kafka's own tools: DumpLogSegments decodes every record as `kraftlake dump` does, the metadata shell (4.3.1)
shows the snapshot's topics and partitions as `kraftlake replay` does, and Kafka's MetadataBatchLoader
builds the same image as kraftlake at every offset where it changes (the quorum runs kraft.version 1, so the
voter set, Kafka's Raft state, is compared too)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from kraftlake.raft.log import LOG_DIR_NAME
from kraftlake.records import snapshot_id
from kraftlake.replay.log_replay import replay_paths
from tests.harness.kafka_oracle import (
    SECRETS_REDACTED,
    assert_dump_matches_kafka,
    assert_matches_kafka,
    replay_topics,
    shell_topics,
)
from tests.harness.processes import REPO, ControllerProcesses

pytestmark = pytest.mark.integration
SNAPSHOT_BYTES = 8 * 1024  # small: the workload makes the controllers write several snapshots
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None  # Kafka's snapshot writer fsyncs each file


@pytest.fixture(scope="module")
def our_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The leader's metadata directory after the workload, every controller stopped (SIGTERM)."""
    root = tmp_path_factory.mktemp("quorum")
    quorum = ControllerProcesses(root, None, "unpublished", quorum="segment_bytes = 1073741824\nkraft_version = 1",
                                 controller=f"snapshot_max_new_record_bytes = {SNAPSHOT_BYTES}")
    quorum.start_all()
    try:
        leader = int(quorum.wait_for_leader()["leaderId"])
        addresses = ",".join(quorum.admin_addresses[node] for node in sorted(quorum.admin_addresses))
        subprocess.run(
            [sys.executable, "-m", "kraftlake.cli.main", "simulate", "--controllers", addresses, "--brokers", "4",
             "--topics", "6", "--partitions", "3", "--steps", "150", "--seed", "7"],
            cwd=REPO, check=True, capture_output=True, timeout=300,
        )
        log_dir = quorum.config.node_dir(leader) / LOG_DIR_NAME
        end = time.monotonic() + 30
        while not list(log_dir.glob("*.checkpoint")) and time.monotonic() < end:
            time.sleep(0.2)
    finally:
        exits = {node: quorum.stop(node) for node in list(quorum.processes)}
    assert exits == {node: 0 for node in quorum.config.voters}, exits
    return log_dir


def latest_snapshot(log_dir: Path) -> Path:
    snapshots = sorted(log_dir.glob("*.checkpoint"), key=lambda path: snapshot_id(path) or 0)
    assert snapshots, f"the controllers wrote no snapshot in {log_dir}"
    return snapshots[-1]


def test_kafka_dump_log_segments_decodes_every_record_as_kraftlake_dump(our_log: Path) -> None:
    """Same records, offsets, types, versions and fields, in every segment and the latest snapshot; the
    only difference is kraftlake's redaction of secrets (the workload creates SCRAM users), checked exactly."""
    files = [*sorted(our_log.glob("*.log")), latest_snapshot(our_log)]
    differences: dict[str, list[int]] = {}
    counts = assert_dump_matches_kafka(files, differences)
    assert sorted(counts) == sorted(files)
    assert all(counts.values()) and sum(counts.values()) > 100
    assert set(differences) <= {SECRETS_REDACTED}


def test_kafka_metadata_shell_shows_the_topics_and_partitions_of_kraftlake_replay(our_log: Path) -> None:
    snapshot = latest_snapshot(our_log)
    shown = shell_topics(snapshot)
    assert sum(len(partitions) for partitions in shown.values()) >= 6
    assert shown == replay_topics(replay_paths([snapshot]).image)
    end = snapshot_id(snapshot)
    assert end is not None
    assert shown == replay_topics(replay_paths(sorted(our_log.glob("*.log")), end.end_offset - 1).image)


def test_kafka_builds_the_image_kraftlake_builds_from_our_log(our_log: Path) -> None:
    with tempfile.TemporaryDirectory(dir=SCRATCH) as work:
        comparison = assert_matches_kafka(our_log, Path(work))
    # every offset compared; Kafka publishes once per batch, so fewer states than offsets (57 of 138 seen)
    assert comparison.compared > 100 and len(comparison.offsets) > 20
    assert sorted(replay_paths([our_log]).image.voters.voters) == [1, 2, 3], "kraft.version 1: voters compared too"
    assert set(comparison.differences) <= {"aborted-then-more", "kraft-version-0"}
