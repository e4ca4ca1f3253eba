"""What an alerts file's job has done, kept in the warehouse (`_alerts/<rule set>.json`) so a restart resumes
where it stopped: the last offset whose changes were matched, the alerts each receiver has not taken yet, and
the partitions under min ISR. Written whole after each step (a local file replaced atomically, an object PUT),
after the delivery it records: a crash in between resends that one delivery, which receivers merge by the
alert's identity; nothing is lost."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftlake.alerts.matcher import UnderMinIsr
from kraftlake.alerts.senders import Message
from kraftlake.lake.warehouse import Warehouse

FOLDER = "_alerts"  # not a Delta table: the warehouse's readers and its maintenance pass it by


@dataclass
class AlertsState:
    matched: int  # changes after this offset are still to be matched
    outbox: dict[str, list[Message]] = field(default_factory=dict)  # per receiver, in offset order
    under_min_isr: UnderMinIsr = field(default_factory=UnderMinIsr)

    def as_json(self) -> dict[str, Any]:
        return {"matched": self.matched, "outbox": self.outbox, "under_min_isr": self.under_min_isr.as_json()}


class StateFile:
    def __init__(self, warehouse: Warehouse, rule_set: str) -> None:
        self.warehouse = warehouse
        self.name = f"{rule_set}.json"
        self.where = f"{warehouse.table_uri(FOLDER)}/{self.name}"

    def load(self) -> AlertsState | None:
        """The kept state (None: this rule set never ran on the warehouse)."""
        if self.warehouse.is_local:
            path = Path(self.where)
            text = path.read_text() if path.exists() else None
        else:
            filesystem = self.warehouse.filesystem(FOLDER)
            if filesystem.get_file_info(self.name).size is None:
                return None
            with filesystem.open_input_stream(self.name) as stream:
                text = stream.read().decode()
        if text is None:
            return None
        document = json.loads(text)
        return AlertsState(int(document["matched"]), document["outbox"],
                           UnderMinIsr.of(document["under_min_isr"]))

    def save(self, state: AlertsState) -> None:
        data = json.dumps(state.as_json(), sort_keys=True).encode()
        if not self.warehouse.is_local:
            with self.warehouse.filesystem(FOLDER).open_output_stream(self.name) as stream:
                stream.write(data)
            return
        folder = Path(self.where).parent
        folder.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".json")
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, self.where)
