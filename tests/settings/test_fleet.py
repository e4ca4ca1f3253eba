"""`fleet.toml`: what a fleet file means (topics, merge order, dotted keys) and that a bad one is refused in
one line naming the file and the cluster's key."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.bridge.publisher import PublisherConfig
from kraftlake.fleet.supervisor import SupervisorConfig, follow_config
from kraftlake.records.topic import cluster_partition
from kraftlake.settings.errors import SettingsError
from kraftlake.settings.fleet import cluster_location, load_fleet


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return path


def test_topics_labels_and_the_merge_order_of_client_settings(tmp_path: Path) -> None:
    secrets = tmp_path / "prod.properties"
    secrets.write_text("# the password stays here\nsasl.username=kraftlake\nsasl.password=s3cret\n"
                       "sasl.mechanism=PLAIN\n")
    path = write(tmp_path, f"""
[defaults.properties]
security.protocol = "SASL_SSL"
"sasl.mechanism" = "SCRAM-SHA-256"

[clusters.prod_eu]
bootstrap_controllers = ["c1:9093", "c2:9093"]
security_file = "{secrets}"
labels = {{ env = "prod", region = "eu-west-1" }}
[clusters.prod_eu.properties]
"sasl.mechanism" = "SCRAM-SHA-512"

[clusters.lab]
metadata_dir = "{tmp_path}"
topic = "lab-log"
""")
    fleet = load_fleet(path)
    prod, lab = fleet.clusters["prod_eu"], fleet.clusters["lab"]
    assert (prod.topic, lab.topic) == ("kraftlake-metadata-prod_eu", "lab-log")
    assert prod.labels == {"env": "prod", "region": "eu-west-1"} and lab.labels == {}
    # defaults, then the security file, then the cluster's own properties; the dotted key reads as quoted
    assert prod.client_properties() == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "kraftlake",
        "sasl.password": "s3cret"}
    config = follow_config(prod, SupervisorConfig(PublisherConfig("kafka:9092"), status_dir=tmp_path))
    assert config.publisher.topic == prod.topic and config.status_file == tmp_path / "prod_eu.json"
    assert "s3cret" not in repr(config) and "s3cret" not in repr(prod)
    assert cluster_location("s3://lake/fleet/", "prod_eu") == "s3://lake/fleet/prod_eu"


@pytest.mark.parametrize(("text", "key", "problem"), [
    ('[clusters.a]\nlabels = { env = "x" }\n', "clusters.a", "give bootstrap_controllers"),
    ('[clusters.a]\nbootstrap_controllers = ["h:1"]\nmetadata_dir = "/x"\n', "clusters.a", "give bootstrap_"),
    ('[clusters.Prod-EU]\nbootstrap_controllers = ["h:1"]\n', "clusters", "cluster name 'Prod-EU'"),
    ('[clusters.eu_published]\nbootstrap_controllers = ["h:1"]\n', "clusters", "cluster name 'eu_published': a "
     "name ending in _published is reserved"),
    ('catalog_refresh_seconds = -1\n[clusters.a]\nbootstrap_controllers = ["h:1"]\n', "catalog_refresh_seconds",
     "Input should be greater than or equal to 0"),
    ('[clusters.a]\nbootstrap_controllers = ["h:1"]\nlables = {}\n', "clusters.a.lables", "unknown setting"),
    ('[clusters.a]\nbootstrap_controllers = ["h:1"]\ntopic = "t"\n[clusters.b]\nbootstrap_controllers = ["h:2"]\n'
     'topic = "t"\n', "clusters.b.topic", "topic t is cluster a's too"),
    ("", "clusters", "no cluster"),
    ('[clusters.default]\nbootstrap_controllers = ["h:1"]\n', "clusters", "cluster name 'default': reserved"),
    ('[clusters.global_temp]\nbootstrap_controllers = ["h:1"]\n', "clusters", "cluster name 'global_temp': reserved"),
    ("[clusters." + "a" * 129 + ']\nbootstrap_controllers = ["h:1"]\n', "clusters",
     f"cluster name '{'a' * 20}'…: at most 128 characters"),
    ('[clusters.a]\nbootstrap_controllers = ["h:1"]\n\n[clusters.b]\nbootstrap_controllers = ["h:2"]\n\n'
     '[ clusters . "a" ]\nbootstrap_controllers = ["h:3"]\n', "clusters.a", "cluster a is given twice (lines 1 and "
     "7): one [clusters.a] table each"),
    ('[clusters.a]\nmetadata_dir = "/var/lib/kafka/meta"\n'
     '[clusters.b]\nmetadata_dir = "/var/lib/kafka/../kafka/meta/"\n',
     "clusters.b.metadata_dir", "directory /var/lib/kafka/../kafka/meta is cluster a's too"),
])
def test_a_bad_fleet_file_names_the_file_and_the_cluster(tmp_path: Path, text: str, key: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SettingsError) as raised:
        load_fleet(path)
    assert str(raised.value).startswith(f"{path}: {key}: {problem}"), str(raised.value)


def test_bad_client_settings_name_the_cluster_and_never_the_password(tmp_path: Path) -> None:
    path = write(tmp_path, '[clusters.a]\nbootstrap_controllers = ["h:1"]\n'
                           '[clusters.a.properties]\n"security.protocol" = "SASL_SSL"\n"sasl.password" = "pw-9"\n')
    cluster = load_fleet(path).clusters["a"]
    with pytest.raises(SettingsError) as raised:
        follow_config(cluster, SupervisorConfig(PublisherConfig("kafka:9092")))
    assert str(raised.value).startswith(f"{path}: clusters.a.properties: security.protocol SASL_SSL needs")
    assert "pw-9" not in str(raised.value)


def test_the_shared_topic_carries_every_cluster_each_on_its_partition(tmp_path: Path) -> None:
    """With a top-level `topic`, every cluster's follower writes there, keyed by its name, on the partition its
    name hashes to; a cluster's own topic is refused then, in one line."""
    clusters = '[clusters.a]\nbootstrap_controllers = ["h:1"]\n[clusters.b]\nbootstrap_controllers = ["h:2"]\n'
    fleet = load_fleet(write(tmp_path, f'topic = "kraftlake-fleet"\ntopic_partitions = 3\n{clusters}'))
    for name, cluster in fleet.clusters.items():
        assert (cluster.topic, cluster.shared_partitions) == ("kraftlake-fleet", 3)
        publisher = follow_config(cluster, SupervisorConfig(PublisherConfig("kafka:9092"))).publisher
        assert (publisher.topic, publisher.cluster, publisher.partitions) == ("kraftlake-fleet", name, 3)
        assert publisher.partition == cluster_partition(name, 3) and publisher.key(b"k") == name.encode() + b"\0k"
    assert load_fleet(write(tmp_path, clusters)).clusters["a"].shared_partitions is None  # the default: its own
    path = write(tmp_path, f'topic = "kraftlake-fleet"\n{clusters}topic = "mine"\n')
    with pytest.raises(SettingsError) as raised:
        load_fleet(path)
    assert str(raised.value).startswith(f"{path}: clusters.b.topic: the fleet's topic kraftlake-fleet carries every "
                                        "cluster")
    path = write(tmp_path, f"topic = \"t\"\ntopic_partitions = 0\n{clusters}")
    with pytest.raises(SettingsError) as raised:
        load_fleet(path)
    assert str(raised.value).startswith(f"{path}: topic_partitions: Input should be greater than or equal to 1")
