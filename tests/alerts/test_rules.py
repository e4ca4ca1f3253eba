"""The alerts file's parser: every mistake is one line naming the file, the rule's line and name."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kraftlake.alerts.errors import AlertsFileError
from kraftlake.alerts.rules import CONDITIONS, load

HEAD = 'alertmanager = ["http://127.0.0.1:9093"]\n\n'


def written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "alerts.toml"
    path.write_text(text)
    return path


def test_a_file_is_read_with_its_defaults(tmp_path: Path) -> None:
    path = written(tmp_path, HEAD + '[[rule]]\nname = "r"\ntable = "brokers"\nwhen = "fenced"\n')
    files = load(path, "http://ui:8080/")
    assert (files.name, files.cluster, files.explorer_url, files.webhooks) == \
        ("alerts", "default", "http://ui:8080", ())
    assert [(r.name, r.table, r.key, r.when, r.kind) for r in files.rules] == [("r", "brokers", "*", "fenced",
                                                                                 "broker_fenced")]


@pytest.mark.parametrize(("rule", "error"), [
    ('name = "r"\ntable = "brokers"\nwhen = "exploded"',
     "rule 'r': unknown condition 'exploded' for brokers; conditions: fenced, unregistered"),
    ('name = "r"\ntable = "configs"\nkey = "topics:orders:retention.ms"\nwhen = "value_changed"',
     "rule 'r': key 'topics:orders:retention.ms' does not name configs: a glob over TYPE:NAME:CONFIG "
     "(topic:orders:retention.ms; a cluster default: broker::CONFIG)"),
    ('name = "r"\ntable = "brokers"\nkey = "b1"\nwhen = "fenced"', "rule 'r': key 'b1' does not name brokers"),
    ('name = "r"\ntable = "brokers"\nwhen = "fenced"\nfor_seconds = 5',
     "rule 'r': for_seconds is a number of seconds >= 0, for partitions only"),
    ('name = "r"\ntable = "brokers"\nwhen = "fenced"\nseverity = "page"', "rule 'r': unknown field 'severity'"),
])
def test_a_bad_rule_is_named_with_its_line(tmp_path: Path, rule: str, error: str) -> None:
    path = written(tmp_path, HEAD + '[[rule]]\nname = "ok"\ntable = "topics"\nwhen = "deleted"\n\n[[rule]]\n' + rule)
    with pytest.raises(AlertsFileError) as raised:
        load(path)
    assert str(raised.value).startswith(f"{path}:8: {error}")


@pytest.mark.parametrize(("text", "error"), [
    ("[[rule]\n", "not TOML"),
    ('[[rule]]\nname = "r"\ntable = "topics"\nwhen = "deleted"\n', "no receiver"),
    (HEAD, "no [[rule]]"),
    (HEAD + 'grafana = "x"\n[[rule]]\nname = "r"\ntable = "topics"\nwhen = "deleted"\n', "unknown field 'grafana'"),
    (HEAD + '[[rule]]\nname = "r"\ntable = "topics"\nwhen = "deleted"\n[[rule]]\nname = "r"\ntable = "topics"\n'
            'when = "deleted"\n', "rule 'r': another rule has this name"),
])
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path, text: str, error: str) -> None:
    path = written(tmp_path, text)
    with pytest.raises(AlertsFileError) as raised:
        load(path)
    assert str(path) in str(raised.value) and error in str(raised.value) and "\n" not in str(raised.value)


def test_the_shipped_alerts_file_names_every_condition() -> None:
    files = load(Path(__file__).resolve().parents[2] / "conf" / "alerts.toml")
    assert {(r.table, r.when) for r in files.rules} == {(t, w) for t, whens in CONDITIONS.items() for w in whens}


def operating_block(language: str, holding: str = "") -> str:
    """The fenced `language` block of docs/operating.md's "Change alerts" section that holds `holding`."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "operating.md").read_text()
    section = text.split("## Change alerts", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    return next(body for kind, body in blocks if kind == language and holding in body)


def test_the_documented_alerts_file_is_read_as_documented(tmp_path: Path) -> None:
    files = load(written(tmp_path, operating_block("toml")))
    assert (files.name, files.cluster, files.alertmanagers, files.webhooks) == \
        ("prod-eu", "prod_eu", ("http://127.0.0.1:9093",), ("http://hooks.internal/kraftlake",))
    assert [(r.name, r.kind, r.for_seconds) for r in files.rules] == [
        ("RetentionChanged", "config_value_changed", 0), ("BrokerFenced", "broker_fenced", 0),
        ("UnderMinIsr5m", "partition_under_min_isr", 300)]


def test_the_documented_error_is_the_one_the_shipped_file_gives(tmp_path: Path) -> None:
    shipped = Path(__file__).resolve().parents[2] / "conf" / "alerts.toml"
    broken = tmp_path / "conf" / "alerts.toml"
    broken.parent.mkdir()
    broken.write_text(shipped.read_text().replace('table = "topics"', 'table = "topicz"'))
    with pytest.raises(AlertsFileError) as raised:
        load(broken)
    documented = next(line for line in operating_block("", "topicz").splitlines() if "topicz" in line)
    assert f"kraftlake alert: {raised.value}" == documented.replace("conf/alerts.toml", str(broken))


def test_the_documented_alertmanager_config_is_valid(tmp_path: Path) -> None:
    amtool = shutil.which("amtool")
    assert amtool, "amtool is missing: `make install` installs prometheus-alertmanager"
    config = written(tmp_path, operating_block("yaml"))
    done = subprocess.run([amtool, "check-config", str(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
