"""The fleet benchmark's scenario logs are metadata logs the project's replay reads as the generator meant them:
a week of history, then live batches appended to the same segment, with the brokers fenced and the partitions
offline that the generator's own state says (what `fleet_offline_partitions` is then asked about)."""

from __future__ import annotations

import time
from pathlib import Path

from bench.bench_fleet import WEEK_MS, week_backlog
from kraftlake.records.files import decode_file
from kraftlake.replay.log_replay import replay_paths


def test_a_week_then_live_batches_replay_to_the_generators_state(tmp_path: Path) -> None:
    now_ms = int(time.time() * 1000)
    scenario = week_backlog(tmp_path / "cluster", seed=2, partitions=200, end_ms=now_ms - 60_000)  # ends in an outage
    backlog_batches = len(scenario.log.batches)
    for step in range(20):
        scenario.event(now_ms + step * 1000)
        scenario.noop(now_ms + step * 1000 + 500)
        scenario.flush()  # batch by batch, as the benchmark appends them

    batches = list(decode_file(scenario.segment))
    assert [b.base_offset for b in batches] == sorted({b.base_offset for b in batches})
    assert batches[backlog_batches - 1].max_timestamp - batches[0].base_timestamp > WEEK_MS - 3_600_000
    result = replay_paths([scenario.segment.parent])
    assert (result.batches, result.records) == (len(scenario.log.batches), scenario.log.next_offset)
    image = result.image
    assert {b for b, reg in image.cluster.brokers.items() if reg.fenced} == scenario.fenced == {0, 4}
    offline = {(topic.topic_id, p) for topic in image.topics.by_id.values()
               for p, partition in topic.partitions.items() if partition.leader < 0}
    assert offline == {key for key, state in scenario.state.items() if state.leader < 0} and offline
    assert all(partition.isr == scenario.state[topic.topic_id, p].isr
               for topic in image.topics.by_id.values() for p, partition in topic.partitions.items())
