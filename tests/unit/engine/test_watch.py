"""The change watcher: changes of other store objects reach the manager's listeners."""

from __future__ import annotations

import time
from pathlib import Path

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.engine.records import ManagerEvent
from agcore_lab.engine.watch import ChangeWatcher
from agcore_lab.store._changes import KEEP_CHANGES
from agcore_lab.store.base import ChangeRecord, SessionRecord


def test_poll_hands_on_only_the_changes_of_others(tmp_path: Path) -> None:
    mine, theirs = SqliteStore(tmp_path / "lab.db"), SqliteStore(tmp_path / "lab.db")
    seen: list[ChangeRecord] = []
    watcher = ChangeWatcher(mine, seen.append)
    assert watcher.poll() == 0  # nothing changed: the counter alone is read
    mine.create_session(SessionRecord(session_id="own", agent_name="a"))
    theirs.create_session(SessionRecord(session_id="other", agent_name="a"))
    theirs.commit(SessionRecord(session_id="other", agent_name="a"), change="slot")
    assert watcher.poll() == 2
    assert [(c.session_id, c.kind) for c in seen] == [("other", "created"), ("other", "slot")]
    assert watcher.poll() == 0


def test_a_watcher_that_fell_behind_the_feed_is_told(tmp_path: Path) -> None:
    mine, theirs = SqliteStore(tmp_path / "lab.db"), SqliteStore(tmp_path / "lab.db")
    gaps: list[bool] = []
    watcher = ChangeWatcher(mine, lambda change: None, on_gap=lambda: gaps.append(True))
    theirs.create_session(SessionRecord(session_id="s", agent_name="a"))
    for version in range(KEEP_CHANGES + 40):
        theirs.commit(SessionRecord(session_id="s", agent_name="a", version=version))
    watcher.poll()
    assert gaps == [True]


def test_the_watcher_runs_while_someone_listens(tmp_path: Path) -> None:
    manager = SessionManager(SqliteStore(tmp_path / "lab.db"), watch_interval=0.02)
    other = SessionManager(SqliteStore(tmp_path / "lab.db"), agents=[Agent(name="a")])
    events: list[str] = []
    unsubscribe = manager.add_listener(lambda event: events.append(event.kind))
    watcher = manager.watch()
    assert watcher is not None and watcher.running
    sid = other.create_sync(other.agents["a"])
    deadline = time.monotonic() + 5
    while "created" not in events and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "created" in events and manager.store.get_session(sid) is not None
    unsubscribe()
    assert not watcher.running
    assert SessionManager(SqliteStore(":memory:"), watch_interval=None).watch() is None


def test_a_checkpointed_turn_logs_its_turn_then_its_checkpoint_and_the_feed_stays_short(
    tmp_path: Path,
) -> None:
    # A turn and its checkpoint go in as one INSERT of two change rows: in that order, and
    # the log is still cut back to its newest rows, however the seq multiples of 32 fall.
    store = SqliteStore(tmp_path / "lab.db")
    manager = SessionManager(store)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel(lambda messages: "ok")))
    start = store.latest_change()
    manager.submit_turn_sync(sid, "one")
    made = store.changes_since(start)
    after = manager.checkpointer.list_checkpoints_sync(sid)[0]
    assert [(c.kind, c.ckpt_id) for c in made] == [("turn", None), ("checkpoint", after.ckpt_id)]
    assert made[1].seq == made[0].seq + 1
    for n in range(KEEP_CHANGES):
        manager.submit_turn_sync(sid, f"turn {n}")
    rows = store.connection.execute("SELECT count(*), max(seq) FROM change_log").fetchone()
    assert KEEP_CHANGES <= rows[0] <= KEEP_CHANGES + 33
    newest = store.changes_since(rows[1] - 2)
    assert [c.kind for c in newest] == ["turn", "checkpoint"]


def test_a_manager_that_missed_changes_tells_every_listener_to_read_again(
    tmp_path: Path,
) -> None:
    # Changes the feed no longer holds reached no listener: live sessions are re-read (a turn
    # event each), then one "missed" event tells the rest (a view of a session not live here,
    # a tree) to read again, before the changes the feed still holds.
    path = tmp_path / "lab.db"
    manager = SessionManager(SqliteStore(path), agents=[Agent(name="a")], watch_interval=3600)
    live = manager.create_sync(manager.agents["a"])
    events: list[ManagerEvent] = []
    unsubscribe = manager.add_listener(events.append)
    watcher = manager.watch()
    assert watcher is not None  # its thread first waits an hour: this test looks by hand
    theirs = SqliteStore(path)
    theirs.create_session(SessionRecord(session_id="s", agent_name="a"))
    assert watcher.poll() == 1
    assert [(e.kind, e.session_id) for e in events] == [("created", "s")]  # nothing missed
    events.clear()
    for version in range(KEEP_CHANGES + 40):
        theirs.commit(SessionRecord(session_id="s", agent_name="a", version=version))
    watcher.poll()
    kinds = [(e.kind, e.session_id, e.remote) for e in events]
    assert kinds[:2] == [("turn", live, True), ("missed", "", True)]
    assert "missed" not in [e.kind for e in events[2:]]
    assert {e.session_id for e in events[2:]} == {"s"}  # then what the feed still holds
    unsubscribe()
