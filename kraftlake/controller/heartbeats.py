"""Broker liveness, kept only in memory on the active controller (Kafka's BrokerHeartbeatManager).

Heartbeats never reach the log: a new active controller starts every session afresh, so a broker that died
around a failover is fenced up to one session timeout later than it would have been. Times come from the
controller's clock, so tests move time instead of sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BrokerSession:
    broker_id: int
    epoch: int
    last_contact_ms: int
    metadata_offset: int = -1
    controlled_shutdown_offset: int | None = None  # set while the broker drains its leaderships


class HeartbeatManager:
    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.sessions: dict[int, BrokerSession] = {}

    def touch(self, broker_id: int, epoch: int, now_ms: int, metadata_offset: int | None = None) -> BrokerSession:
        """Record contact from `broker_id` at `epoch`; a new epoch starts a new session."""
        session = self.sessions.get(broker_id)
        if session is None or session.epoch != epoch:
            session = self.sessions[broker_id] = BrokerSession(broker_id, epoch, now_ms)
        session.last_contact_ms = now_ms
        if metadata_offset is not None:
            session.metadata_offset = max(session.metadata_offset, metadata_offset)
        return session

    def remove(self, broker_id: int) -> None:
        self.sessions.pop(broker_id, None)

    def has_valid_session(self, broker_id: int, now_ms: int) -> bool:
        session = self.sessions.get(broker_id)
        return session is not None and now_ms - session.last_contact_ms <= self.session_timeout_ms

    def expired(self, now_ms: int) -> list[BrokerSession]:
        """Sessions past the timeout, oldest contact first."""
        late = [s for s in self.sessions.values() if now_ms - s.last_contact_ms > self.session_timeout_ms]
        return sorted(late, key=lambda s: (s.last_contact_ms, s.broker_id))

    def lowest_active_offset(self, active_broker_ids: set[int]) -> int | None:
        """The lowest metadata offset reported by the given brokers (None when there are none)."""
        offsets = [s.metadata_offset for s in self.sessions.values() if s.broker_id in active_broker_ids]
        return min(offsets) if offsets else None
