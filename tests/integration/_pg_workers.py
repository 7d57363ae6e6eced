"""Worker functions for the cross-process tests on PostgreSQL (real processes, real server).

They live in their own plain module so that processes started with ``spawn`` can import them
by name (the test adds this directory to ``sys.path``, which spawned children inherit).
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Sequence
from typing import Any

from _shared_workers import logging_agent, manager_for

from agcore_lab import RuntimeBundle, SessionManager, open_store


def rotate_turns(
    url: str,
    session_ids: Sequence[str],
    worker: int,
    turns: int,
    asked_path: str,
    start: Any,
    out: Any,
) -> None:
    """Take ``turns`` turns, turn ``n`` in session ``(worker + n) % len(session_ids)`` (so the
    writers mostly work on different sessions and sometimes meet on one, waiting for each
    other's lease); report ``(worker, session_id, text, outcome)`` per turn, then ``done``."""
    try:
        # A lease of 10 s: on a loaded machine a 1 s lease may lapse mid-turn.
        bundle = RuntimeBundle(store=open_store(url), lease_seconds=10.0)
        manager = SessionManager(
            bundle=bundle, agents=[logging_agent(asked_path)], watch_interval=None
        )
        start.wait(120)
        for n in range(turns):
            sid = session_ids[(worker + n) % len(session_ids)]
            text = f"w{worker}-t{n}" + ("+tool" if n % 5 == 0 else "")
            try:
                manager.submit_turn_sync(sid, text, wait=60)
                out.put((worker, sid, text, "ok"))
            except BaseException as exc:
                out.put((worker, sid, text, f"{type(exc).__name__}: {exc}"))
        out.put((worker, None, None, "done"))
        manager.store.close()  # type: ignore[attr-defined]
    except BaseException:
        out.put((worker, None, None, traceback.format_exc()))


def die_mid_commit(url: str, session_id: str, marker: str, asked_path: str) -> None:
    """Submit a turn ``doomed`` and stop inside its commit — after the session row is updated
    and the messages are inserted, before the transaction commits — writing ``marker`` to say
    so; then wait there for the parent's ``kill -9``."""
    import agcore_lab.store.sqlite as sqlite_module

    real_insert_calls = sqlite_module.insert_calls

    def insert_calls_then_hang(conn: Any, calls: Any, *rest: Any) -> None:
        real_insert_calls(conn, calls, *rest)
        with open(marker, "w", encoding="utf-8") as note:
            note.write(str(os.getpid()))
            note.flush()
            os.fsync(note.fileno())
        time.sleep(120)

    sqlite_module.insert_calls = insert_calls_then_hang  # type: ignore[assignment]
    manager = manager_for(url, logging_agent(asked_path))
    manager.submit_turn_sync(session_id, "doomed")
