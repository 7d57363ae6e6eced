"""Worker functions for the multi-process checkpoint tests.

They live in their own plain module so that processes started with ``spawn`` can import them
by name (the test adds this directory to ``sys.path``, which spawned children inherit).
"""

from __future__ import annotations

import traceback
from typing import Any

from agcore_lab import Agent, RuntimeBundle, ScriptedModel, SessionManager, SqliteStore

# A killed writer's turn lease runs out after this long; the next writer waits for it.
LEASE_SECONDS = 1.0
PADDING = " and some more words to make the rows realistic" * 4


def _manager(path: str) -> SessionManager:
    bundle = RuntimeBundle(store=SqliteStore(path), lease_seconds=LEASE_SECONDS)
    return SessionManager(bundle=bundle, agents=[Agent(name="writer", model=ScriptedModel())])


def write_until_killed(path: str, session_id: str | None, out: Any) -> None:
    """Run turns (each checkpointed), memory writes, manual checkpoints, rollbacks and forks
    on ``path`` as fast as possible until the parent kills this process.

    Reports ``("started", session_id)`` after the first turn (creating the session when
    ``session_id`` is ``None``, else recovering it).
    """
    try:
        manager = _manager(path)
        if session_id is None:
            sid = manager.create_sync(manager.agents["writer"])
            session = manager.get_sync(sid)
        else:
            sid, session = session_id, manager.recover_sync(session_id)
        # The previous writer was killed mid-turn: its lease runs out, then this turn goes on.
        manager.submit_turn_sync(sid, "first turn of this process" + PADDING, wait=5)
        out.put(("started", sid))
        n = 0
        while True:
            n += 1
            manager.submit_turn_sync(sid, f"turn {n}" + PADDING)
            if n % 3 == 0:
                session.session_memory.set(f"key{n % 4}", {"n": n, "text": PADDING})
            if n % 4 == 0:
                session.session_memory.delete(f"key{(n + 1) % 4}")
            if n % 5 == 0:
                manager.checkpoint_sync(sid, label=f"manual {n}")
            if n % 11 == 0:
                back = manager.checkpointer.list_checkpoints_sync(sid)[:4][-1]
                manager.checkpointer.rollback_sync(sid, back.ckpt_id)
            if n % 17 == 0:
                newest = manager.checkpointer.list_checkpoints_sync(sid)[0]
                manager.checkpointer.fork_sync(sid, newest.ckpt_id)
    except BaseException:
        out.put(("error", traceback.format_exc()))


def fork_the_other_process_session(path: str, session_id: str, go: Any, out: Any) -> None:
    """Process B: see A's session and checkpoints, fork one, run a turn in the fork; then,
    once A says it wrote more, report how many checkpoints of A's session it sees now."""
    try:
        manager = _manager(path)
        seen = [r.session_id for r in manager.store.list_sessions()]
        ckpts = manager.checkpointer.list_checkpoints_sync(session_id)
        at_one = next(c for c in ckpts if c.turn_index == 1)
        child = manager.checkpointer.fork_sync(session_id, at_one.ckpt_id)
        manager.submit_turn_sync(child, "written by process B")
        out.put(("forked", seen, [c.ckpt_id for c in ckpts], at_one.ckpt_id, child))
        if not go.wait(30):
            raise TimeoutError("process A never said it wrote more")
        later = manager.checkpointer.list_checkpoints_sync(session_id)
        out.put(("later", [c.ckpt_id for c in later], [c.turn_index for c in later]))
        manager.store.close()
    except BaseException:
        out.put(("error", traceback.format_exc()))
