"""What an operation sees and returns: the working state and the controller's settings in, records and a
response out. Operations are pure functions of their context, so each is tested without threads or logs."""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kraftlake.controller.config import ControllerConfig
from kraftlake.controller.heartbeats import HeartbeatManager
from kraftlake.controller.versions import LATEST_METADATA_VERSION
from kraftlake.controller.working_state import ControllerState

T = TypeVar("T")

# Kafka's reserved ids (Uuid.ZERO_UUID, ONE_UUID and the directory ids up to 100): never handed out.
_RESERVED_UUID_LIMIT = 100


@dataclass
class ControllerResult(Generic[T]):
    records: list[Any]
    response: T


@dataclass
class WriteContext:
    state: ControllerState
    config: ControllerConfig
    now_ms: int
    next_write_offset: int  # the offset the first record of this operation will get
    committed_offset: int  # the last committed offset (-1: none)
    heartbeats: HeartbeatManager
    rng: random.Random = field(default_factory=random.Random)

    @property
    def metadata_version(self) -> int:
        level = self.state.metadata_version
        return LATEST_METADATA_VERSION if level is None else level

    def new_uuid(self) -> str:
        """A random Kafka Uuid in text form, never a reserved one nor one starting with '-' (Kafka's rule,
        so that ids cannot be mistaken for command-line options)."""
        while True:
            raw = self.rng.getrandbits(128).to_bytes(16, "big")
            text = base64.urlsafe_b64encode(raw)[:22].decode("ascii")
            if int.from_bytes(raw, "big") >= _RESERVED_UUID_LIMIT and not text.startswith("-"):
                return text
