"""The committed type stubs of the generated record classes match their schemas."""

import pytest

from kraftlake.records import stubs


@pytest.mark.parametrize("module", stubs.MODULES, ids=lambda module: module.__name__)
def test_committed_stub_matches_the_schemas(module) -> None:
    assert stubs.stub_path(module).read_text() == stubs.render(module), "run `python -m kraftlake.records.stubs`"


def test_every_record_field_is_in_the_stub() -> None:
    from kraftlake.records import metadata_types

    text = stubs.render(metadata_types)
    for schema in metadata_types.SCHEMAS:
        assert f"class {schema.name}(_Generated):" in text
        for field in schema.fields:
            assert f"    def {field.attr}(self) -> " in text
