"""The one set of parsers of users' parameters (`kraftlake.inputs`), as properties over any text: a number is
ASCII digits within its bounds and nothing else, a time is an ISO-8601 text of bounded length, and every
other input is refused with an `InputError` of one line naming the parameter, never another exception."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kraftlake import inputs

PARSERS: dict[str, Callable[[str], object]] = {
    "integer": lambda text: inputs.integer("key", text),
    "offset": lambda text: inputs.offset("at", text),
    "iso_time": lambda text: inputs.iso_time("from", text),
    "epoch_or_iso_time": lambda text: inputs.epoch_or_iso_time("--at-time", text),
    "moment": lambda text: inputs.moment("at", text),
    "page_number": lambda text: inputs.page_number("page", text, 1000),
}
NAMES = {"integer": "key", "offset": "at", "iso_time": "from", "epoch_or_iso_time": "--at-time", "moment": "at",
         "page_number": "page"}
# what users (and attackers) type: digits of other scripts, superscripts, huge numbers, times, separators
TEXTS = st.one_of(
    st.text(max_size=80),
    st.text(alphabet="0123456789-²١٢９٣ _+:.TZ", max_size=30),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.datetimes(timezones=st.just(UTC)).map(datetime.isoformat),
)


@pytest.mark.parametrize("parser", sorted(PARSERS))
@settings(max_examples=400, derandomize=True)
@given(text=TEXTS)
@example(text="²")
@example(text="١٢")
@example(text="1_0")
@example(text="9223372036854775808")
@example(text="9" * 5000)
@example(text="2026-11-27T02:14" + "0" * 5000)
@example(text="0" * 21 + "\x1f" * 5 + "\U00018cd6" * 12)  # short, but each unprinted character is 10 escaped
def test_any_text_parses_or_is_refused_in_one_line_naming_the_parameter(parser: str, text: str) -> None:
    try:
        PARSERS[parser](text)
    except inputs.InputError as error:
        line = str(error)
        assert line.startswith(f"{NAMES[parser]} ") and "\n" not in line and len(line) < 200


@settings(max_examples=400, derandomize=True)
@given(text=TEXTS)
def test_a_number_is_ascii_digits_within_int64(text: str) -> None:
    stripped = text.strip(" ")
    ascii_number = stripped.removeprefix("-").isascii() and stripped.removeprefix("-").isdigit()
    try:
        value = inputs.integer("key", text)
    except inputs.InputError:
        assert not ascii_number or not inputs.INT64_MIN <= int(stripped) <= inputs.INT64_MAX
    else:
        assert ascii_number and value == int(stripped) and inputs.INT64_MIN <= value <= inputs.INT64_MAX


@given(value=st.integers(min_value=0, max_value=inputs.INT64_MAX))
def test_every_offset_reads_back(value: int) -> None:
    assert inputs.offset("at", str(value)) == value
    assert inputs.moment("at", str(value)) == inputs.Moment(value, is_offset=True)


@given(moment=st.datetimes(min_value=datetime(1970, 1, 1), timezones=st.just(UTC)))
def test_a_time_is_its_epoch_milliseconds(moment: datetime) -> None:
    expected = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)  # exact: no float
    assert inputs.iso_time("from", moment.isoformat()) == expected
    assert inputs.moment("at", moment.isoformat()) == inputs.Moment(expected, is_offset=False)


@pytest.mark.parametrize(("text", "line"), [
    ("²", "at '²': an offset is written in the digits 0-9"),
    ("١٢", "at '١٢': an offset is written in the digits 0-9"),
    ("-1", "at '-1': an offset is from 0 to 9223372036854775807"),
    ("9223372036854775808", "at '9223372036854775808': an offset is from 0 to 9223372036854775807"),
    ("9" * 5000, f"at '{'9' * 40}… (5000 characters)': an offset is from 0 to 9223372036854775807"),
    ("yesterday", "at 'yesterday': not an offset nor an ISO-8601 time"),
])
def test_the_lines_say_what_a_moment_is(text: str, line: str) -> None:
    with pytest.raises(inputs.InputError) as refused:
        inputs.moment("at", text)
    assert str(refused.value) == line
