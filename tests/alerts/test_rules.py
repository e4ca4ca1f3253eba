"""The alerts file's parser: every mistake is one line naming the file, the rule's line and name."""

from __future__ import annotations

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
