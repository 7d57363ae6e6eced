"""Worker functions for the multi-process store tests.

They live in their own plain module so that processes started with ``spawn`` can import them
by name (the test adds this directory to ``sys.path``, which spawned children inherit).
"""

from __future__ import annotations

import traceback
from typing import Any

from agcore_lab.llm.messages import UserMessage
from agcore_lab.store.base import LinkRecord, SessionRecord
from agcore_lab.store.sqlite import SqliteStore

SHARED = "shared"


def write_memory_and_commits(path: str, worker: int, writes: int, start: Any, out: Any) -> None:
    """Open ``path``, then interleave ``writes`` memory writes to the shared session with
    ``writes`` commits (one message each) to this worker's own session. Report to ``out``."""
    try:
        start.wait(30)
        store = SqliteStore(path)
        own = f"worker-{worker}"
        store.create_session(SessionRecord(session_id=own, agent_name="w"))
        head: str | None = None
        for n in range(writes):
            store.memory_set(SHARED, f"w{worker}-{n}", {"worker": worker, "n": n}, {})
            message = UserMessage(content=f"{worker}:{n}")
            link = LinkRecord(
                node_id=f"{own}-{n}", parent_node_id=head, message_id=message.id, depth=n
            )
            store.commit(
                SessionRecord(session_id=own, agent_name="w", turn_index=n + 1, version=n),
                messages=[message],
                links=[link],
            )
            head = link.node_id
        store.close()
        out.put((worker, "ok"))
    except BaseException:
        out.put((worker, traceback.format_exc()))


def open_store(path: str, start: Any, out: Any) -> None:
    """Open ``path`` (running migrations if needed) at the same moment as other workers."""
    try:
        start.wait(30)
        store = SqliteStore(path)
        out.put(store.schema_version)
        store.close()
    except BaseException:
        out.put(traceback.format_exc())
