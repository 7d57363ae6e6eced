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


def _turns_then_flood(here: SessionManager, other: SessionManager, sid: str, *prompts: str) -> None:
    """The other kernel's turns on ``sid``, then more changes on another session than the feed
    keeps; then this kernel's watcher looks once."""
    watcher: ChangeWatcher | None = here.watch()
    assert watcher is not None
    for prompt in prompts:
        other.submit_turn_sync(sid, prompt)
    other.store.create_session(SessionRecord(session_id="busy", agent_name="writer"))
    for version in range(KEEP_CHANGES + 40):
        other.store.commit(SessionRecord(session_id="busy", agent_name="writer", version=version))
    watcher.poll()


@pytest.mark.parametrize(
    ("view_class", "listed", "before", "prompts", "after"),
    [
        # The timeline lists its checkpoints newest first ...
        (CheckpointTimeline, "checkpoints", [1, 0], ("two", "three"), [3, 2, 1, 0]),
        # ... the call inspector its model calls oldest first.
        (CallInspector, "calls", [1], ("two",), [1, 2]),
    ],
    ids=["timeline", "call-inspector"],
)
def test_a_view_reads_again_after_changes_it_never_heard_of(
    lab: tuple[SessionManager, SessionManager, str],
    view_class: type[CheckpointTimeline] | type[CallInspector],
    listed: str,
    before: list[int],
    prompts: tuple[str, ...],
    after: list[int],
) -> None:
    here, other, sid = lab
    view = view_class(here, sid)
    try:
        assert [c.turn_index for c in getattr(view, listed)] == before
        _turns_then_flood(here, other, sid, *prompts)
        assert view.wait(10)
        assert [c.turn_index for c in getattr(view, listed)] == after
    finally:
        view.close()
