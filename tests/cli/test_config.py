"""Where the warehouse is and how to reach it: flags over `[warehouse]` in the config, the URI kept as given."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.cli.config import resolve_warehouse
from kraftlake.cli.errors import UserFacingError

CONFIG = """
[materialize]
warehouse = "s3://lake/kraftlake"
[warehouse]
storage_options = { AWS_ENDPOINT_URL = "http://127.0.0.1:8333", AWS_REGION = "us-east-1" }
"""


def test_flags_override_the_config(tmp_path: Path) -> None:
    config = tmp_path / "kraftlake.toml"
    config.write_text(CONFIG)
    from_config = resolve_warehouse(None, [], config)
    assert from_config.uri == "s3://lake/kraftlake"
    assert dict(from_config.storage_options) == {"AWS_ENDPOINT_URL": "http://127.0.0.1:8333", "AWS_REGION": "us-east-1"}
    flagged = resolve_warehouse("s3://other/w", ["AWS_REGION=eu-west-1", "AWS_ALLOW_HTTP=true"], config)
    assert flagged.uri == "s3://other/w"
    assert dict(flagged.storage_options) == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:8333", "AWS_REGION": "eu-west-1", "AWS_ALLOW_HTTP": "true",
    }


def test_without_config_a_local_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    location = resolve_warehouse(None)
    assert (location.uri, dict(location.storage_options)) == ("warehouse", {})


def test_a_malformed_option_is_refused() -> None:
    with pytest.raises(UserFacingError, match="KEY=VALUE"):
        resolve_warehouse("w", ["AWS_REGION"])
