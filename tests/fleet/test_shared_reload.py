"""The fleet job's driver side on the shared topic, without Spark or Kafka (nothing is read or written here): a
cluster added to the fleet file gets its writer without a query restart, a changed shared topic is refused in
one line until a restart, a cluster's messages on another partition than its own stop that cluster alone, and a
key that names no cluster is reported once; a stop registers nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.jobs.fleet import FleetWriter, _reload
from kraftlake.lake.topic_replay import TopicMessage
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.topic import cluster_partition
from kraftlake.settings.flags import MaterializeConfig
from kraftlake.settings.fleet import cluster_location, load_fleet


def write(path: Path, topic: str, *clusters: str) -> None:
    path.write_text(f'topic = "{topic}"\ntopic_partitions = 3\n' + "".join(
        f'[clusters.{name}]\nbootstrap_controllers = ["h:1"]\n' for name in clusters))


@pytest.fixture
def running(tmp_path: Path) -> tuple[Path, MaterializeConfig, FleetWriter]:
    path = tmp_path / "fleet.toml"
    write(path, "kraftlake-fleet", "alpha")
    base = MaterializeConfig("kafka:9092", "kraftlake-fleet", str(tmp_path / "lake"), tmp_path / "checkpoint")
    writer = FleetWriter(None, base, shared=True)
    writer.add(load_fleet(path), "alpha")
    return path, base, writer


def test_a_cluster_added_joins_without_a_restart_and_a_changed_topic_waits_for_one(
    running: tuple[Path, MaterializeConfig, FleetWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    path, base, writer = running
    fleet = load_fleet(path)
    write(path, "kraftlake-fleet", "alpha", "beta")
    fleet, restart = _reload(None, base, path, fleet, writer)
    assert not restart and writer.clusters() == {"alpha", "beta"} and set(fleet.clusters) == {"alpha", "beta"}
    assert writer.partitions["beta"] == cluster_partition("beta", 3)

    write(path, "another-topic", "alpha", "beta", "gamma")
    kept, restart = _reload(None, base, path, fleet, writer)
    assert kept is fleet and not restart and writer.clusters() == {"alpha", "beta"}
    assert capsys.readouterr().err.splitlines() == [
        f"materialize: {path}: topic / topic_partitions changed: a restart of the job applies that; going on with "
        "the clusters as they were"]


def test_messages_on_another_partition_stop_their_cluster_and_an_unnamed_key_is_told_once(
    running: tuple[Path, MaterializeConfig, FleetWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, writer = running
    own = cluster_partition("alpha", 3)
    message = TopicMessage(7, b"\0" * 8, b"batch")
    writer.write_shared({("", 1): [message], ("alpha", (own + 1) % 3): [message], ("nobody", own): [message]})
    writer.write_shared({("", 2): [message]})
    assert list(writer.failures) == ["alpha"]
    assert capsys.readouterr().err.splitlines() == [
        "materialize: topic kraftlake-fleet partition 1 Kafka offset 7: a message whose key names no cluster "
        "(skipped, and any more like it)",
        f"materialize: cluster alpha: its messages are on partition {(own + 1) % 3} of the shared topic, not on its "
        f"own partition {own}: the topic's partition count changed, and a cluster's order holds only within one "
        "partition (its warehouse keeps the last good image; the other clusters go on)"]


def test_a_stop_registers_nothing_the_end_of_a_run_would(
    running: tuple[Path, MaterializeConfig, FleetWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    """A stop (SIGTERM) publishes what is pending and leaves the catalog as the last round left it: registering
    every waiting cluster (45 tables each) outlived a service manager's grace period at 50 clusters (exit -9)."""
    _, base, writer = running
    Warehouse(cluster_location(base.warehouse, "alpha")).create()
    writer.flush(register=False)
    assert writer.registered == set() and "register" not in capsys.readouterr().err  # not even tried
    writer.flush()  # the end of a run tries (here, with no Spark session, that is one line and a later try)
    assert "cannot register cluster alpha" in capsys.readouterr().err


def test_a_cluster_added_is_registered_before_those_waiting_and_one_removed_keeps_its_warehouse(
    running: tuple[Path, MaterializeConfig, FleetWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    """alpha, there from the start, still waits to be registered (here every try fails: no Spark session) when
    beta is added: beta is tried first, and alpha keeps its place behind it. alpha then removed: no longer
    written, its warehouse left as it is; beta, on the running shared topic, is to read its part back."""
    path, base, writer = running
    for name in ("alpha", "beta"):
        Warehouse(cluster_location(base.warehouse, name)).create()
    write(path, "kraftlake-fleet", "alpha", "beta")
    fleet, _ = _reload(None, base, path, load_fleet(path), writer)
    assert writer.unread == {"beta"}
    writer.register_new()
    tried = [line.split("cluster ")[1].split(":")[0] for line in capsys.readouterr().err.splitlines()]
    assert tried == ["beta", "alpha"]

    write(path, "kraftlake-fleet", "beta")
    _reload(None, base, path, fleet, writer)
    assert writer.clusters() == {"beta"} and set(writer.readers) == {"beta"}
    assert "materialize: cluster alpha left the fleet file: no longer written" in capsys.readouterr().err
    assert Warehouse(cluster_location(base.warehouse, "alpha")).exists()


def test_the_clusters_share_one_budget_for_offset_only_publishes(
    running: tuple[Path, MaterializeConfig, FleetWriter],
) -> None:
    """Every cluster's pipeline is given the fleet's one `IdleBudget`, at the file's rate (read again at a reload)."""
    path, base, writer = running
    path.write_text(path.read_text().replace("topic_partitions = 3\n", "topic_partitions = 3\n"
                                             "idle_publishes_per_second = 0.5\n") + (
        '[clusters.beta]\nbootstrap_controllers = ["h:1"]\n'))
    _reload(None, base, path, load_fleet(path), writer)
    assert writer.idle_budget.rate == 0.5
    for name in ("alpha", "beta"):
        replay = writer.writers[name][1].replay
        replay.pipeline = replay._rebuilt(before_kafka_offset=0)  # no message before 0: nothing is read
        assert replay.pipeline.idle_budget is writer.idle_budget
