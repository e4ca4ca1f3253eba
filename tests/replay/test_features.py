"""Finalized features: metadata.version kept apart, kraft.version ignored, level 0 removes, MV < 7 refused."""

from __future__ import annotations

import pytest

from kraftlake.records import metadata_types as mt
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import Provenance
from tests.replay.builders import MV, apply_records


def level(name: str, value: int) -> object:
    return mt.FeatureLevelRecord(name=name, feature_level=value)


def test_metadata_version_is_kept_apart_from_other_features() -> None:
    image = apply_records([MV(14), level("group.version", 1)])
    assert image.features.metadata_version == 14
    assert dict(image.features.finalized) == {"group.version": 1}


def test_kraft_version_is_ignored() -> None:
    """KAFKA-18979: kraft.version belongs to the Raft layer, not to the metadata image."""
    image = apply_records([MV(21), level("kraft.version", 1)])
    assert "kraft.version" not in image.features.finalized
    assert apply_records([level("kraft.version", 1)]).features.is_empty()


def test_level_zero_removes_a_feature() -> None:
    before = apply_records([MV(21), level("group.version", 1), level("transaction.version", 2)])
    after = apply_records([level("group.version", 0)], before)
    assert dict(after.features.finalized) == {"transaction.version": 2}
    assert dict(apply_records([level("group.version", 1), level("group.version", 0)]).features.finalized) == {}


@pytest.mark.parametrize("value", [0, 1, 6])
def test_metadata_version_below_3_3_iv3_is_refused(value: int) -> None:
    with pytest.raises(ReplayError, match=f"Unsupported metadata version level {value}"):
        apply_records([MV(value)])


def test_metadata_version_may_go_down() -> None:
    """ML10: the loader accepts a lower metadata.version (a downgrade is the controller's decision)."""
    assert apply_records([MV(9)], apply_records([MV(29)])).features.metadata_version == 9


def test_finish_snapshot_drops_features_but_keeps_metadata_version() -> None:
    before = apply_records([MV(21), level("group.version", 1), level("transaction.version", 2)])
    delta = MetadataDelta(before)
    delta.replay(level("transaction.version", 1))
    delta.finish_snapshot()
    after = delta.apply(Provenance())
    assert after.features.metadata_version == 21
    assert dict(after.features.finalized) == {"transaction.version": 1}
