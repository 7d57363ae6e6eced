"""The collector while a listing builds its records: off inside, on again after (if it was
on), the records moved to the oldest generation rather than left for the young ones to
rescan; a collector the program switched off, or objects it froze, are left as they were."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.store._gc_pause import paused_collector


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[SqliteStore, str]]:
    store = SqliteStore(tmp_path / "l.db")
    manager = SessionManager(store, watch_interval=None)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel(lambda m: "hi")))
    for turn in range(5):
        manager.submit_turn_sync(sid, f"question {turn}")
    yield store, sid
    store.close()


def _oldest(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects(generation=2))


def test_a_listing_leaves_its_records_in_the_oldest_generation(
    lab: tuple[SqliteStore, str],
) -> None:
    store, sid = lab
    assert gc.isenabled()
    listed = store.list_checkpoints(sid)
    assert gc.isenabled() and len(listed) == 6
    record = listed[0]
    parts = [record, record.__dict__, record.slots, record.slots["main"], record.spend]
    assert all(_oldest(part) for part in parts)  # no young collection will rescan them


class _Node:
    def __init__(self) -> None:
        self.other: object = self  # a cycle: only the collector frees it


def test_a_garbage_cycle_made_before_a_listing_is_not_kept_alive_by_it(
    lab: tuple[SqliteStore, str],
) -> None:
    store, sid = lab
    gc.collect()
    node = _Node()
    gone = weakref.ref(node)
    del node  # garbage now, in the youngest generation
    store.list_checkpoints(sid)
    assert gone() is None  # collected, not promoted with the records


def test_a_collector_switched_off_stays_off_and_frozen_objects_stay_frozen(
    lab: tuple[SqliteStore, str],
) -> None:
    store, sid = lab
    gc.disable()
    try:
        listed = store.list_checkpoints(sid)
        assert not gc.isenabled() and not _oldest(listed[0])
    finally:
        gc.enable()
    kept = [object() for _ in range(3)]
    gc.freeze()
    try:
        listed = store.list_checkpoints(sid)
        assert gc.isenabled() and gc.get_freeze_count() > 0  # gc.unfreeze would empty it
        assert not _oldest(kept[0])  # still frozen, not moved back by the listing
    finally:
        gc.unfreeze()


def test_nested_and_concurrent_pauses_switch_the_collector_on_once_all_are_done(
    lab: tuple[SqliteStore, str],
) -> None:
    store, sid = lab
    with paused_collector():
        with paused_collector():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still building
        assert len(store.list_checkpoints(sid)) == 6
        assert not gc.isenabled()
    assert gc.isenabled()
    errors: list[BaseException] = []

    def listing() -> None:
        try:
            for _ in range(20):
                assert len(store.list_checkpoints(sid)) == 6
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=listing) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and gc.isenabled()
