"""A store that refuses the warehouse is one line naming the warehouse, with delta-rs's causes in order."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from kraftlake.cli.commands.warehouse import store_errors
from kraftlake.cli.errors import UserFacingError
from tests.fixtures.s3 import S3Store


@pytest.mark.parametrize(("broken", "cause"), [("bad keys", "403 Forbidden"), ("missing bucket", "404 Not Found")])
def test_a_refusing_store_is_named_with_its_cause(s3_store: S3Store, broken: str, cause: str) -> None:
    store = replace(s3_store, secret_key="wrong") if broken == "bad keys" else replace(s3_store, bucket="no-such")
    uri = store.uri(f"w-{uuid.uuid4().hex[:8]}")
    with pytest.raises(UserFacingError) as raised, store_errors(uri):
        write_deltalake(f"{uri}/images", pa.table({"a": [1]}), storage_options=store.storage_options())
    message = str(raised.value)
    assert message.startswith(f"warehouse {uri}: ") and cause in message, message
    assert "\n" not in message and "\x1b" not in message and "<?xml" not in message
