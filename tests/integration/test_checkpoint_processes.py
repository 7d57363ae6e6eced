"""Checkpoints on a real file shared by processes: a writer killed mid-checkpoint, two kernels."""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import Agent, SessionManager, SqliteStore

HERE = Path(__file__).parent


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Any:
    # Spawned children inherit sys.path, so they can import the worker module by name.
    monkeypatch.syspath_prepend(str(HERE))
    import _checkpoint_workers

    return _checkpoint_workers


def _report(out: Any, timeout: float = 60) -> tuple[Any, ...]:
    report: tuple[Any, ...] = out.get(timeout=timeout)
    assert report[0] != "error", report[1]
    return report


def _check_file(path: Path, session_id: str, checked: set[str]) -> int:
    """Open the file after a crash and use every checkpoint not checked yet; return how many
    checkpoints the session has."""
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = SqliteStore(path)
    try:
        manager = SessionManager(store, agents=[Agent(name="writer")])
        checkpointer = manager.checkpointer
        every = store.list_checkpoints()  # the session's and its forks'
        new = [c for c in every if c.ckpt_id not in checked]
        assert new, "the writer made no checkpoint this round"
        for meta in new:  # each one exports completely
            snapshot = checkpointer.export_snapshot_sync(meta.ckpt_id)
            current = next(s for s in snapshot.slots if s.slot_id == meta.current_slot_id)
            assert len(current.message_ids) == meta.message_count
            assert snapshot.turn_index == meta.turn_index
        checked.update(c.ckpt_id for c in every)

        before = checkpointer.list_checkpoints_sync(session_id)[0]
        # Recovery keeps what was committed: if the kill fell between a turn and its
        # checkpoint, that turn stays and a "recovered" checkpoint records it.
        session = manager.recover_sync(session_id)
        ckpts = checkpointer.list_checkpoints_sync(session_id)
        latest = ckpts[0]
        assert session.turn_index == latest.turn_index
        assert len(session.messages) == latest.message_count
        assert latest.turn_index in (before.turn_index, before.turn_index + 1)
        if latest.ckpt_id != before.ckpt_id:
            assert (latest.label, latest.parent_ckpt_id) == ("recovered", before.ckpt_id)
        fresh = {c.ckpt_id for c in new}
        mine = [c for c in ckpts if c.ckpt_id in fresh]
        assert mine
        sample = mine[:5] + mine[5 :: max(1, len(mine) // 10)] + [ckpts[-1], latest]
        for meta in sample:  # and rolls back, live and in the store
            checkpointer.rollback_sync(session_id, meta.ckpt_id)
            assert session.turn_index == meta.turn_index
            assert len(session.messages) == meta.message_count
            assert session.current_slot_id == meta.current_slot_id
        return len(ckpts)
    finally:
        store.close()


@pytest.mark.slow
def test_a_writer_killed_mid_checkpoint_leaves_every_checkpoint_usable(
    tmp_path: Path, workers: Any
) -> None:
    path = tmp_path / "crash.db"
    ctx = multiprocessing.get_context("spawn")
    session_id: str | None = None
    checked: set[str] = set()
    sizes = []
    for delay in (0.7, 1.0, 1.3):  # different moments of the write loop
        out = ctx.Queue()
        writer = ctx.Process(target=workers.write_until_killed, args=(str(path), session_id, out))
        writer.start()
        try:
            _, session_id = _report(out)
            time.sleep(delay)
        finally:
            os.kill(writer.pid, signal.SIGKILL)  # type: ignore[arg-type]
            writer.join(30)
        try:
            late = out.get(timeout=0.1)
        except queue.Empty:
            late = None
        assert late is None, f"the writer stopped on its own: {late}"
        assert writer.exitcode == -signal.SIGKILL
        assert session_id is not None
        time.sleep(workers.LEASE_SECONDS + 0.2)  # the killed writer's turn lease runs out
        sizes.append(_check_file(path, session_id, checked))
    assert sizes == sorted(sizes) and sizes[0] > 10, sizes


def test_two_processes_see_each_others_sessions_and_checkpoints(
    tmp_path: Path, workers: Any
) -> None:
    path = tmp_path / "shared.db"
    store = SqliteStore(path)  # process A: this one, its connection open throughout
    try:
        manager = SessionManager(store, agents=[Agent(name="writer")])
        sid = manager.create_sync(manager.agents["writer"])
        for text in ("first", "second"):
            manager.submit_turn_sync(sid, text)
        mine = [c.ckpt_id for c in manager.checkpointer.list_checkpoints_sync(sid)]

        ctx = multiprocessing.get_context("spawn")
        go, out = ctx.Event(), ctx.Queue()
        other = ctx.Process(
            target=workers.fork_the_other_process_session, args=(str(path), sid, go, out)
        )
        other.start()
        try:
            _, seen, their_view, fork_point, child = _report(out)
            assert sid in seen and their_view == mine  # B sees A's session and checkpoints

            # A sees B's fork, its checkpoints and its turn.
            assert manager.children_sync(sid) == [child]
            assert manager.parent_sync(child) == sid
            node = manager.tree_sync().find(sid)
            assert node is not None and [c.session_id for c in node.children] == [child]
            theirs = manager.checkpointer.list_checkpoints_sync(child)
            assert [c.source for c in theirs] == ["auto", "fork"]
            assert theirs[-1].parent_ckpt_id == fork_point
            kid = manager.recover_sync(child)
            assert [m.text for m in kid.messages] == [
                "first",
                "[scripted] first",
                "written by process B",
                "[scripted] written by process B",
            ]
            assert [m.text for m in manager.get_sync(sid).messages][-1] == "[scripted] second"

            manager.submit_turn_sync(sid, "third, after B started")
            go.set()
            _, later, turns = _report(out)
            newest = manager.checkpointer.list_checkpoints_sync(sid)[0]
            assert later[0] == newest.ckpt_id and turns[0] == 3  # B sees A's new checkpoint
        finally:
            other.join(30)
        assert other.exitcode == 0
    finally:
        store.close()
