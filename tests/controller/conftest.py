"""A controller on an in-memory single-node log with a manual clock: every test decides when time moves,
when batches commit and who leads, so nothing sleeps and nothing is timing-dependent."""

from __future__ import annotations

import random
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

import pytest

from kraftlake.controller import (
    BrokerRegistrationRequest,
    ControllerConfig,
    Listener,
    LocalMetadataLog,
    ManualClock,
    QuorumController,
)
from kraftlake.controller.versions import SUPPORTED_FEATURES

T = TypeVar("T")
TIMEOUT = 60  # generous: the suite shares two cores with Spark


def incarnation(broker_id: int, generation: int = 0) -> str:
    """A valid, distinct Kafka uuid per broker and generation."""
    import base64

    raw = (broker_id * 1000 + generation + 1000).to_bytes(16, "big")
    return base64.urlsafe_b64encode(raw)[:22].decode("ascii")


class Harness:
    def __init__(self, config: ControllerConfig, auto_commit: bool = True) -> None:
        self.clock = ManualClock()
        self.log = LocalMetadataLog(auto_commit=auto_commit)
        self.config = config
        self.controller = QuorumController(
            self.log, config, clock=self.clock, rng=random.Random(7), background_tasks=False,
            controller_addresses={1: "127.0.0.1:9701", 2: "127.0.0.1:9702"},
        ).start()
        self.epochs: dict[int, int] = {}

    def wait(self, future: Future[T]) -> T:
        return future.result(TIMEOUT)

    def elect(self, leader_id: int | None) -> None:
        self.log.elect(leader_id, self.clock.now_ms())
        # any request queued after the election sees its effect
        self.wait(self.controller.run_periodic_tasks()) if leader_id == self.config.node_id else None

    def offset(self) -> int:
        return self.log.end_offset() - 1

    def records_after(self, offset: int) -> list[Any]:
        """Metadata records committed after `offset` (control batches left out)."""
        return [
            record.message
            for batch in self.log.committed_batches() if not batch.is_control
            for record in batch.records if record.offset > offset
        ]

    def register(self, broker_id: int, rack: str | None = None, *, generation: int = 0,
                 features: dict[str, tuple[int, int]] | None = None, unfence: bool = True,
                 previous_broker_epoch: int = -1) -> int:
        request = BrokerRegistrationRequest(
            broker_id, incarnation(broker_id, generation), [Listener("PLAINTEXT", "localhost", 9000 + broker_id)],
            features if features is not None else dict(SUPPORTED_FEATURES), rack=rack,
            previous_broker_epoch=previous_broker_epoch,
        )
        epoch = self.wait(self.controller.register_broker(request))
        self.epochs[broker_id] = epoch
        if unfence:
            self.heartbeat(broker_id)
        return epoch

    def heartbeat(self, broker_id: int, **kwargs: Any) -> Any:
        return self.wait(self.controller.broker_heartbeat(
            broker_id, self.epochs[broker_id], self.controller.committed_offset, **kwargs
        ))

    @property
    def image(self) -> Any:
        return self.controller.committed_image

    def partition(self, topic: str, partition_id: int) -> Any:
        return self.image.topics.by_name[topic].partitions[partition_id]


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness(ControllerConfig(node_id=1, noop_interval_ms=0))
    h.elect(1)
    yield h
    h.controller.close()


@pytest.fixture
def make_harness() -> Iterator[Any]:
    made: list[Harness] = []

    def make(auto_commit: bool = True, **settings: Any) -> Harness:
        h = Harness(ControllerConfig(**{"node_id": 1, "noop_interval_ms": 0, **settings}), auto_commit)
        made.append(h)
        return h

    yield make
    for h in made:
        h.controller.close()
