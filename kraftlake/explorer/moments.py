"""A moment as users write it, the CLI's way (`kraftlake history --from`): digits are an offset, anything else
an ISO-8601 time (UTC when it names no zone), parsed by `kraftlake.inputs` and turned into an offset by the
reader's one rule (`WarehouseReader.offset_at`). Refusals of what the warehouse cannot answer stay the reader's."""

from __future__ import annotations

from kraftlake import inputs
from kraftlake.lake.reader import WarehouseReader


def offset_of(reader: WarehouseReader, text: str, name: str = "at") -> int:
    """The offset `text` (the parameter `name`) names: an offset as written, or the reader's offset at that
    time (InputError: neither)."""
    found = inputs.moment(name, text)
    return found.value if found.is_offset else reader.offset_at(found.value)
