"""`kraftlake materialize` settings: conf/kraftlake.toml through `settings`, each value overridden by its flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.cli.commands.materialize import config_from
from kraftlake.cli.errors import UserFacingError
from kraftlake.cli.main import build_parser


def test_the_file_gives_defaults_and_flags_override_them(tmp_path: Path) -> None:
    path = tmp_path / "kraftlake.toml"
    path.write_text('[kafka]\ntopic = "from-file"\n[materialize]\nwarehouse = "wh"\nmax_offsets_per_trigger = 7\n')
    args = build_parser().parse_args(
        ["materialize", "--config", str(path), "--bootstrap-servers", "127.0.0.1:1", "--warehouse", "flagged"]
    )
    config = config_from(args)
    assert (config.topic, config.warehouse, config.max_offsets_per_trigger) == ("from-file", "flagged", 7)
    assert (config.bootstrap_servers, config.spark_checkpoint) == ("127.0.0.1:1", Path("checkpoints/materialize"))
    args = build_parser().parse_args(
        ["materialize", "--config", str(path), "--bootstrap-servers", "127.0.0.1:1", "--trigger-seconds", "0"]
    )
    with pytest.raises(UserFacingError, match="trigger_seconds must be positive"):
        config_from(args)
