"""Parameters as users write them, parsed once for every command and every API route and page: offsets,
epoch milliseconds, ISO-8601 times, integer keys, page numbers (bottom level: imports nothing of the project).

Python's own parsing is too lenient for input from anyone: `'²'.isdigit()` is true and `int('²')` raises,
`int('١٢')` is 12, `int('1_0')` is 10, and more than 4,300 digits exceed the interpreter's limit. Here a number
is ASCII digits (an optional `-`) within the bounds its use has (a Kafka offset is a signed 64-bit integer),
every text is bounded in length, and anything else is an `InputError`: one line naming the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_TIME_CHARS = 64  # the longest ISO-8601 time (with nanoseconds and a zone) is about 35
MAX_SHOWN_CHARS = 40  # of a refused text, in the error line
MAX_DIGITS = 19  # of a 64-bit integer: longer is out of bounds before Python's 4,300-digit limit is near
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class InputError(ValueError):
    """A parameter that is not what it must be; the message is one line naming it. A ValueError, so a
    validator that raises it is refused the way its framework refuses bad values (FastAPI: 422)."""

    def __init__(self, name: str, text: str, reason: str) -> None:
        super().__init__(f"{name} {_shown(text)!r}: {reason}")
        self.name = name


def _shown(text: str) -> str:
    """What the line quotes of a refused text: at most MAX_SHOWN_CHARS of its escaped form (a control or unprinted
    character counts as its escape, up to 10 characters), and its length when cut, so the line stays short."""
    if len(repr(text)) - 2 <= MAX_SHOWN_CHARS:
        return text
    kept = ""
    for char in text:
        if len(repr(kept + char)) - 2 > MAX_SHOWN_CHARS:
            break
        kept += char
    return f"{kept}… ({len(text)} characters)"


def integer(name: str, text: str, low: int = INT64_MIN, high: int = INT64_MAX, what: str = "an integer") -> int:
    """An integer in [low, high] written in ASCII digits (spaces around it allowed)."""
    stripped = text.strip(" ")
    if not _is_number(stripped):
        raise InputError(name, text, f"{what} is written in the digits 0-9")
    if len(stripped.removeprefix("-")) > MAX_DIGITS or not low <= int(stripped) <= high:
        raise InputError(name, text, f"{what} is from {low} to {high}")
    return int(stripped)


def _is_number(text: str) -> bool:
    """ASCII digits with an optional `-` (`str.isdigit` alone takes any script's digits, and `²`)."""
    digits = text.removeprefix("-")
    return digits.isascii() and digits.isdigit()


def _looks_like_number(text: str) -> bool:
    """Digits of any script: meant as a number, refused as one when they are not ASCII."""
    return text.strip(" ").removeprefix("-").isdigit()


def offset(name: str, text: str, low: int = 0) -> int:
    """A metadata offset (`low` -1 where "before the first offset" is meant, as `changes --from -1`)."""
    return integer(name, text, low, INT64_MAX, "an offset")


def iso_time(name: str, text: str) -> int:
    """Epoch milliseconds of an ISO-8601 time, UTC when it names no zone."""
    stripped = text.strip(" ")
    if len(stripped) > MAX_TIME_CHARS or not stripped.isascii():
        raise InputError(name, text, "not an ISO-8601 time (e.g. 2026-11-27T02:14)")
    try:
        moment = datetime.fromisoformat(stripped)
    except ValueError:
        raise InputError(name, text, "not an ISO-8601 time (e.g. 2026-11-27T02:14)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    # integer arithmetic: a float timestamp times 1000 may land a millisecond early (an ISO time with .123)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def epoch_or_iso_time(name: str, text: str) -> int:
    """Epoch milliseconds, written as such (digits) or as an ISO-8601 time (the CLI's `--at-time`)."""
    if _looks_like_number(text):
        return integer(name, text, what="a time in epoch milliseconds")
    try:
        return iso_time(name, text)
    except InputError:
        raise InputError(name, text, "not epoch milliseconds nor an ISO-8601 time") from None


@dataclass(frozen=True)
class Moment:
    """A moment as the explorer and `history --from/--to` take it: an offset (digits) or a time (epoch ms)."""

    value: int
    is_offset: bool


def moment(name: str, text: str, low: int = 0) -> Moment:
    """Digits are an offset (from `low`), anything else an ISO-8601 time."""
    if _looks_like_number(text):
        return Moment(offset(name, text, low), is_offset=True)
    try:
        return Moment(iso_time(name, text), is_offset=False)
    except InputError:
        raise InputError(name, text, "not an offset nor an ISO-8601 time") from None


def page_number(name: str, text: str, high: int) -> int:
    """A page's number or size, from 1 to `high`."""
    return integer(name, text, 1, high, f"a {name}")
