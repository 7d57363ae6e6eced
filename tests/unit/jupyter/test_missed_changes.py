"""Views read again when the watcher fell behind the change feed (a ``missed`` event).

Another kernel's turns on a session, then more changes elsewhere than the feed keeps: the feed
no longer holds a single change of that session, so only the ``missed`` event can tell a view
of it (not live in this kernel) that it is stale.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.engine.watch import ChangeWatcher
from agcore_lab.jupyter import CallInspector, CheckpointTimeline
from agcore_lab.store._changes import KEEP_CHANGES
from agcore_lab.store.base import SessionRecord


def _agent() -> Agent:
    return Agent(name="writer", model=ScriptedModel())


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[SessionManager, SessionManager, str]]:
    """(this kernel's manager, another kernel's, a session the other one made)."""
    path = tmp_path / "lab.db"
    other = SessionManager(SqliteStore(path), agents=[_agent()], watch_interval=None)
    sid = other.create_sync(other.agents["writer"])
    other.submit_turn_sync(sid, "one")
    # Its watcher thread first waits an hour: the tests look by hand (``watcher.poll()``).
    here = SessionManager(SqliteStore(path), agents=[_agent()], watch_interval=3600)
    yield here, other, sid
    here.store.close()
    other.store.close()


def _watcher(manager: SessionManager) -> ChangeWatcher:
    watcher = manager.watch()
    assert watcher is not None
    return watcher


def _flood(other: SessionManager) -> None:
    """More changes on another session than the feed keeps."""
    other.store.create_session(SessionRecord(session_id="busy", agent_name="writer"))
    for version in range(KEEP_CHANGES + 40):
        other.store.commit(SessionRecord(session_id="busy", agent_name="writer", version=version))


def test_a_timeline_reads_again_after_changes_it_never_heard_of(
    lab: tuple[SessionManager, SessionManager, str],
) -> None:
    here, other, sid = lab
    view = CheckpointTimeline(here, sid)
    try:
        watcher = _watcher(here)
        assert [c.turn_index for c in view.checkpoints] == [1, 0]
        other.submit_turn_sync(sid, "two")
        other.submit_turn_sync(sid, "three")
        _flood(other)
        watcher.poll()
        assert view.wait(10)
        assert [c.turn_index for c in view.checkpoints] == [3, 2, 1, 0]
    finally:
        view.close()


def test_a_call_inspector_reads_again_after_changes_it_never_heard_of(
    lab: tuple[SessionManager, SessionManager, str],
) -> None:
    here, other, sid = lab
    view = CallInspector(here, sid)
    try:
        watcher = _watcher(here)
        assert [c.turn_index for c in view.calls] == [1]
        other.submit_turn_sync(sid, "two")
        _flood(other)
        watcher.poll()
        assert view.wait(10)
        assert [c.turn_index for c in view.calls] == [1, 2]  # oldest first
    finally:
        view.close()
