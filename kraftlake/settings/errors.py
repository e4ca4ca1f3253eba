"""The one error a bad configuration raises: which file, which key, what is wrong with it."""

from __future__ import annotations

from pathlib import Path


class SettingsError(Exception):
    """A configuration file that cannot be read or holds a bad value; the message is the whole story."""

    def __init__(self, path: Path | None, key: str | None, problem: str) -> None:
        self.path = path
        self.key = key
        self.problem = problem
        where = ": ".join(str(part) for part in (path, key) if part)
        super().__init__(f"{where}: {problem}" if where else problem)
