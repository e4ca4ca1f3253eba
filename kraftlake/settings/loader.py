"""Reading a TOML file and validating a table of it against a typed model (pydantic), with errors that name
the file and the dotted key (`quorum.election_timeout_ms`), never a traceback."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from kraftlake.settings.errors import SettingsError

Model = TypeVar("Model")
UNKNOWN_NAME_ERRORS = {"extra_forbidden", "unexpected_keyword_argument"}  # from a model, from a dataclass


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The parsed document; `what` says which configuration it is ("quorum", "controller", …)."""
    try:
        return tomllib.loads(path.read_text())
    except OSError as error:
        raise SettingsError(None, None, f"cannot read {what} config {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(path, None, str(error)) from None


def validate(
    path: Path | None, model: type[Model], values: Mapping[str, Any], section: str | None = None,
    table_of: Callable[[str], str | None] | None = None,
) -> Model:
    """`values` (the table `section` of `path`, or the whole document) as a `model`. `table_of` names the table
    a field came from when the model gathers several tables."""
    try:
        return TypeAdapter(model).validate_python(dict(values))
    except ValidationError as error:
        first = error.errors()[0]
        location = [str(part) for part in first["loc"] if part != "[key]"]  # pydantic marks a bad dict key
        table = table_of(location[0]) if table_of and location else section
        key = ".".join(part for part in (table, *location) if part)
        unknown = first["type"] in UNKNOWN_NAME_ERRORS
        problem = "unknown setting" if unknown else first["msg"].removeprefix("Value error, ")
        raise SettingsError(path, key or None, problem) from None
    except (TypeError, ValueError) as error:  # raised by a model's own checks after field validation
        raise SettingsError(path, section, str(error)) from None
