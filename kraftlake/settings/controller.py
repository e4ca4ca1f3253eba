"""`conf/controller.toml`: [controller] (the controller's own settings), [admin] (where the admin API of each
node listens, and its token) and [publisher] (the Kafka topic the committed log is copied to).
The [controller] table is validated by the controller's `ControllerConfig`, whose defaults are Kafka's
feature levels that the controller package owns; this module only checks that it is a table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kraftlake.settings.kraftlake import DEFAULT_TOPIC
from kraftlake.settings.loader import read_toml, validate


class AdminSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    token: str = Field(default="", repr=False)  # optional shared secret; never logged
    addresses: dict[int, str] = Field(default_factory=dict)  # node id -> host:port of its admin API


class PublisherSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap_servers: str = ""  # empty: $KRAFTLAKE_BOOTSTRAP_SERVERS or the local broker
    topic: str = DEFAULT_TOPIC


class ControllerFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    controller: dict[str, Any] = Field(default_factory=dict)
    admin: AdminSettings = AdminSettings()
    publisher: PublisherSettings = PublisherSettings()


def load_controller_file(path: Path) -> ControllerFile:
    return validate(path, ControllerFile, read_toml(path, "controller"))
