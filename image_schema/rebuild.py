"""Table rows back into a MetadataImage: how a reader of the warehouse gets the canonical image form.

What the tables do not hold cannot come back: SCRAM salts and keys are empty, and redacted config values
stay "[redacted]". The canonical JSON redacts exactly those, so an image read back from Delta prints the
same canonical JSON as the replay it was written from. Each sub-image rebuilds itself (its module's
`rebuild`).
"""

from __future__ import annotations

from kraftlake.image_schema.spec import TableRows
from kraftlake.image_schema.tables import SUB_IMAGE_TABLES
from kraftlake.replay.image import MetadataImage, Provenance


def image_from_rows(tables: TableRows, provenance: Provenance) -> MetadataImage:
    return MetadataImage(
        provenance=provenance,
        **{sub_image.sub_image: sub_image.rebuild(tables) for sub_image in SUB_IMAGE_TABLES},
    )
