"""A moment as users write it, the CLI's way (`kraftlake history --from`): digits are an offset, anything else
an ISO-8601 time (UTC when it names no zone), turned into an offset by the reader's one rule
(`WarehouseReader.offset_at`). Refusals of what the warehouse cannot answer stay the reader's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kraftlake.explorer.errors import BadRequest
from kraftlake.lake.reader import WarehouseReader

MAX_OFFSET = 2**63 - 1  # a Kafka offset is a signed 64-bit integer
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_time(text: str) -> int:
    """Epoch milliseconds of an ISO-8601 time (BadRequest: not one)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadRequest(f"{text!r}: not an offset nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    # integer arithmetic: a float timestamp times 1000 may land a millisecond early (an ISO time with .123)
    return (moment - EPOCH) // timedelta(milliseconds=1)


def offset_of(reader: WarehouseReader, text: str) -> int:
    """The offset `text` names: an offset as written, or the reader's offset at that time."""
    stripped = text.strip()
    if stripped.isdigit():
        offset = int(stripped)
        if offset > MAX_OFFSET:
            raise BadRequest(f"{text!r}: an offset is at most {MAX_OFFSET}")
        return offset
    if stripped.startswith("-") and stripped[1:].isdigit():
        raise BadRequest(f"{text!r}: an offset is not negative")
    return reader.offset_at(parse_time(stripped))
