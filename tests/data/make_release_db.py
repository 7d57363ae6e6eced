"""Make ``release_1fa7d84.db``: a database file written by the release before issue 13.

The file is committed as test data; this script documents how it was made. Run it with the
package of commit 1fa7d84 on the path (never with the current code), e.g.::

    mkdir /tmp/old && git archive 1fa7d84 | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old python tests/data/make_release_db.py tests/data/release_1fa7d84.db

It writes: session ``pending`` (one turn stopped at a ``transfer`` call awaiting approval, so
its checkpoint holds the pending call in the old, unversioned ``pending_json``), session
``done`` (the call approved and executed), memory entries, and a forked slot.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore, Tool, ToolCall


def transfer(to: str, amount: int) -> str:
    """Move money."""
    return f"sent {amount} to {to}"


def main(path: Path) -> None:
    path.unlink(missing_ok=True)
    call = ToolCall(name="transfer", arguments={"to": "u2", "amount": 100})
    model = ScriptedModel(lambda m: call if m[-1].role == "user" else "done")
    agent = Agent(
        name="bank",
        model=model,
        tools=[Tool.from_function(transfer, requires_approval=True, approval_timeout=None)],
    )
    store = SqliteStore(path)
    manager = SessionManager(store, agents=[agent])
    pending = manager.create_sync(agent)
    session = manager.get_sync(pending)
    session.session_memory.set("customer", "u2", {"source": "release"})
    manager.submit_turn_sync(pending, "send 100 to u2")
    done = manager.create_sync(agent)
    first = manager.submit_turn_sync(done, "send 100 to u2")
    waiting = first.pending_tool_call
    assert waiting is not None
    manager.resume_sync(done, waiting.run_id, waiting.interrupt_id, "approve")
    other = manager.get_sync(done)
    other.fork_slot_sync("side")
    manager.checkpoint_sync(done, "after fork")
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
    conn.close()
    print(json.dumps({"pending": pending, "done": done}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
