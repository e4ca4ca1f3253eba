"""The next producer id block start. Kafka's image keeps only this number, and a snapshot never drops it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProducerIdsImage:
    next_producer_id: int = -1

    def is_empty(self) -> bool:
        return self.next_producer_id == -1


class ProducerIdsDelta:
    def __init__(self, image: ProducerIdsImage) -> None:
        self.image = image
        self.next_producer_id = image.next_producer_id

    def replay_producer_ids(self, record: Any) -> None:
        self.next_producer_id = record.next_producer_id

    def finish_snapshot(self) -> None:
        """Nothing to drop: ProducerIdsDelta.finishSnapshot is a no-op in Kafka."""

    def apply(self) -> ProducerIdsImage:
        if self.next_producer_id == self.image.next_producer_id:
            return self.image
        return ProducerIdsImage(self.next_producer_id)
