"""The collector pause every bulk replay runs under: no automatic collection inside, the collector's state
restored after, the big survivors frozen, cycles collected first when asked (a long-lived process)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

from kraftlake.records import encode_batch, make_batch
from kraftlake.replay.gc_pause import FREEZE_ABOVE_OBJECTS, paused_collector
from kraftlake.replay.log_replay import replay_paths, replay_sources, resolve_sources
from tests.replay.builders import MV, P, T


def survivors() -> list[list[int]]:
    """More new tracked objects than the pause freezes after."""
    return [[] for _ in range(FREEZE_ABOVE_OBJECTS + 1000)]


def frozen(objects: list[list[int]]) -> int:
    """How many of `objects` are in the collector's permanent generation. Asked of the objects themselves,
    not of `gc.get_freeze_count()`, which other threads' frees of frozen objects lower."""
    young = {id(each) for each in gc.get_objects()}  # generations 0-2: the permanent one is not listed
    return sum(gc.is_tracked(each) and id(each) not in young for each in objects)


class Node:
    """A tracked object that can sit in a cycle."""

    def __init__(self) -> None:
        self.other: Any = None


def test_paused_inside_restored_after_and_the_big_survivors_frozen() -> None:
    enabled = gc.isenabled()
    try:
        kept = []  # alive until the end: objects freed inside the pause lower the count it looks at
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            with paused_collector():
                assert not gc.isenabled()
                kept.append(survivors())
            assert gc.isenabled() is state
            assert frozen(kept[-1]) == len(kept[-1])
            with paused_collector(), paused_collector():
                pass
            assert gc.isenabled() is state, "nesting restores the outer state"
    finally:
        (gc.enable if enabled else gc.disable)()


def test_a_failed_body_freezes_nothing_and_collect_reclaims_cycles_before_freezing() -> None:
    kept = []
    with pytest.raises(RuntimeError), paused_collector():
        kept.append(survivors())
        raise RuntimeError("boom")
    assert frozen(kept[-1]) == 0
    assert gc.isenabled()
    gc.collect()  # the failed body's objects are old now
    with paused_collector(collect=True):
        cycle = Node()
        cycle.other = Node()
        cycle.other.other = cycle
        gone = weakref.ref(cycle)
        del cycle
        kept.append(survivors())
    assert gone() is None, "the cycle was collected, not frozen"
    assert frozen(kept[-1]) == len(kept[-1])


def test_kraftlake_replay_runs_paused(tmp_path: Path) -> None:
    log = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(encode_batch(make_batch(0, 1, 100, [MV(14), T("foo"), P("foo", 0)])))
    seen: list[bool] = []

    def publish(*_: Any) -> None:
        seen.append(gc.isenabled())

    result = replay_sources(resolve_sources([log]), publish=publish)
    assert seen == [False], "the loader published inside the pause"
    assert gc.isenabled()
    assert set(result.image.topics.by_name) == set(replay_paths([log]).image.topics.by_name) == {"foo"}
