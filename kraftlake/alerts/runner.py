"""`kraftlake alert`'s loop: follows a warehouse's published images, matches each new stretch of changes once,
and delivers each receiver's alerts in offset order, retrying a receiver that fails with backoff while the
others (and the matching) go on. It only reads the warehouse: the writer never waits for it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kraftlake.alerts.errors import DeliveryError
from kraftlake.alerts.matcher import matching
from kraftlake.alerts.rules import AlertsFile
from kraftlake.alerts.senders import Receiver, message
from kraftlake.alerts.state import AlertsState, StateFile
from kraftlake.lake.errors import LakeError
from kraftlake.lake.reader import WarehouseReader

POLL_S = 1.0
FIRST_RETRY_S = 1.0
MAX_RETRY_S = 60.0
BATCH = 100  # alerts per request; the state is saved after each

Log = Callable[[str], None]


@dataclass
class _Backoff:
    wait_s: float = 0.0
    next_at: float = 0.0
    error: str = ""  # the last failure's line, logged once until it changes

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def failed(self, now: float, error: str) -> bool:
        """Whether the failure is news (a line to log)."""
        self.wait_s = min(MAX_RETRY_S, self.wait_s * 2 or FIRST_RETRY_S)
        self.next_at = now + self.wait_s
        news, self.error = error != self.error, error
        return news


@dataclass
class AlertJob:
    reader: WarehouseReader
    files: AlertsFile
    receivers: list[Receiver]
    log: Log
    state_file: StateFile = field(init=False)
    state: AlertsState = field(init=False)

    def __post_init__(self) -> None:
        self.state_file = StateFile(self.reader.warehouse, self.files.name)

    def start(self, from_offset: int | None) -> None:
        """The kept state, else a first run: from `from_offset`, else from the last published image (only what
        happens from now on)."""
        kept = self.state_file.load()
        if kept is None:
            kept = AlertsState(self.reader.last_published() if from_offset is None else from_offset)
        names = {receiver.name for receiver in self.receivers}
        for gone in sorted(set(kept.outbox) - names):  # taken out of the file: its alerts go with it
            if kept.outbox[gone]:
                self.log(f"{gone} is no longer in {self.files.path}: its {len(kept.outbox[gone])} waiting "
                         "alert(s) are dropped")
            del kept.outbox[gone]
        for name in sorted(names):
            kept.outbox.setdefault(name, [])
        self.state = kept
        self.state_file.save(kept)

    def run(self, stop: threading.Event, poll_s: float = POLL_S) -> None:
        backoffs = {receiver.name: _Backoff() for receiver in self.receivers}
        read_error = ""
        while not stop.is_set():
            try:
                self.match()
                read_error = ""
            except LakeError as error:  # not readable now (nothing published yet, a maintenance race): next poll
                if str(error) != read_error:
                    self.log(f"cannot read the warehouse yet, retrying: {error}")
                read_error = str(error)
            for receiver in self.receivers:
                self.deliver(receiver, backoffs[receiver.name])
            stop.wait(poll_s)

    def match(self) -> None:
        last = self.reader.last_published()
        if last <= self.state.matched:
            return
        alerts = matching(self.reader, self.files, self.state.matched, last, self.state.under_min_isr)
        messages = [message(alert, self.files) for alert in alerts]
        for pending in self.state.outbox.values():
            pending.extend(messages)
        if messages:
            self.log(f"offsets {self.state.matched + 1}..{last}: {len(messages)} alert(s) to send")
        self.state.matched = last
        self.state_file.save(self.state)

    def deliver(self, receiver: Receiver, backoff: _Backoff) -> None:
        pending = self.state.outbox[receiver.name]
        now = time.monotonic()
        if not pending or not backoff.due(now):
            return
        try:
            while pending:
                receiver.send(pending[:BATCH])
                del pending[:BATCH]
                self.state_file.save(self.state)
        except DeliveryError as error:
            if backoff.failed(now, str(error)):
                self.log(f"{error} ({len(pending)} alert(s) waiting, retrying with backoff)")
            return
        if backoff.error:
            self.log(f"{receiver.name}: delivering again")
        backoff.wait_s, backoff.error = 0.0, ""

    def waiting(self) -> dict[str, int]:
        return {name: len(pending) for name, pending in self.state.outbox.items() if pending}
