"""Every configuration file read through `kraftlake.settings`: the shipped files load as written, and a bad file is
refused with its path and the dotted key named (by the library, and as exit code 2 by the CLI)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from kraftlake.cli.main import main
from kraftlake.controller.config import controller_config
from kraftlake.raft.config import load_config
from kraftlake.settings import SettingsError, load_controller_file, load_kraftlake

CONF = Path(__file__).resolve().parents[2] / "conf"
VOTERS = '[voters]\n1 = "127.0.0.1:1"\n2 = "127.0.0.1:2"\n'


def test_shipped_files_load_as_written() -> None:
    quorum_doc = tomllib.loads((CONF / "quorum.toml").read_text())
    quorum = load_config(CONF / "quorum.toml")
    assert quorum.election_timeout_ms == quorum_doc["quorum"]["election_timeout_ms"]
    assert quorum.data_dir == Path(quorum_doc["quorum"]["data_dir"])
    assert {node: f"{host}:{port}" for node, (host, port) in quorum.observers.items()} == {
        int(node): address for node, address in quorum_doc["observers"].items()
    }
    controller_doc = tomllib.loads((CONF / "controller.toml").read_text())
    controller_file = load_controller_file(CONF / "controller.toml")
    assert controller_file.admin.addresses == {int(k): v for k, v in controller_doc["admin"]["addresses"].items()}
    config = controller_config(CONF / "controller.toml", controller_file, 2)
    assert config.node_id == 2
    assert config.bootstrap_features == controller_doc["controller"]["bootstrap_features"]
    assert config.session_timeout_ms == controller_doc["controller"]["session_timeout_ms"]
    kraftlake_doc = tomllib.loads((CONF / "kraftlake.toml").read_text())
    materialize = load_kraftlake(CONF / "kraftlake.toml").materialize
    assert materialize.warehouse == kraftlake_doc["materialize"]["warehouse"]


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ('[quorum]\nelection_timeout_ms = "soon"\n' + VOTERS, "quorum.election_timeout_ms", "valid number"),
        ("[quorum]\nelection_timout_ms = 5\n" + VOTERS, "quorum.election_timout_ms", "unknown setting"),
        ('[voters]\n1 = "127.0.0.1:1"\n2 = "localhost"\n', "voters.2", "expected host:port"),
        ("[quorum]\n" + VOTERS + "[observer]\n", "observer", "unknown table"),
        ('[quorum]\ndata_dir = "x"\n', "voters", "no [voters] configured"),
    ],
)
def test_a_bad_quorum_file_names_the_file_and_the_key(tmp_path: Path, text: str, key: str, problem: str) -> None:
    path = tmp_path / "quorum.toml"
    path.write_text(text)
    with pytest.raises(SettingsError, match=re.escape(problem)) as caught:
        load_config(path)
    assert (caught.value.path, caught.value.key) == (path, key)
    assert str(caught.value).startswith(f"{path}: {key}: ")


def test_a_bad_controller_setting_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "controller.toml"
    path.write_text("[controller]\nsession_timeout_ms = 9000\nsesion_timeout_ms = 1\n")
    with pytest.raises(SettingsError, match="unknown setting") as caught:
        controller_config(path, load_controller_file(path), 1)
    assert (caught.value.path, caught.value.key) == (path, "controller.sesion_timeout_ms")
    path.write_text("[controller]\nmetadata_version = \"9.9\"\n")
    with pytest.raises(SettingsError, match=re.escape("9.9")) as caught:
        controller_config(path, load_controller_file(path), 1)
    assert caught.value.path == path and caught.value.key is not None and caught.value.key.startswith("controller")
    path.write_text('[admin.addresses]\none = "127.0.0.1:1"\n')
    with pytest.raises(SettingsError, match="valid integer") as caught:
        load_controller_file(path)
    assert caught.value.key == "admin.addresses.one"


def test_unreadable_and_malformed_files_are_named(tmp_path: Path) -> None:
    missing = tmp_path / "absent.toml"
    with pytest.raises(SettingsError, match=f"cannot read quorum config {missing}"):
        load_config(missing)
    with pytest.raises(SettingsError, match="no such config file"):
        load_kraftlake(missing)
    broken = tmp_path / "kraftlake.toml"
    broken.write_text("[materialize\n")
    with pytest.raises(SettingsError, match=str(broken)):
        load_kraftlake(broken)
    broken.write_text("[materialize]\ntrigger_seconds = \"fast\"\n")
    with pytest.raises(SettingsError, match=re.escape("materialize.trigger_seconds")):
        load_kraftlake(broken)


def test_the_cli_turns_a_bad_file_into_one_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "quorum.toml"
    path.write_text("[quorum]\nsegment_bytes = \"big\"\n" + VOTERS)
    assert main(["quorum", "describe", "--config", str(path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"kraftlake quorum: {path}: quorum.segment_bytes: ") and error.count("\n") == 1
