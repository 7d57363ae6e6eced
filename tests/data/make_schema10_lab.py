"""Write ``schema10_lab.db`` and what it reads back (``schema10_lab.json``) with the code of
schema 10 (run it with an agcore_lab whose migrations end at m010, e.g. the main checkout):

    python tests/data/make_schema10_lab.py tests/data

A bank agent's lab: turns, a tool call waiting for approval, one approved and run, model-call
records, session memory, a fork with its own turns, a merge (links: messages placed again), a
rollback, a manual checkpoint with a label, and hand-written ids (``m1``) that are no
``new_id``. ``tests/unit/store/test_layout_migration.py`` opens a copy with today's code (which
migrates it) and compares everything with the JSON.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore, Tool, ToolCall
from agcore_lab.llm.messages import AssistantMessage, Message, UserMessage
from agcore_lab.llm.scripted import Reply
from agcore_lab.store.base import LinkRecord, SessionRecord, SlotRecord


def dump(store: SqliteStore) -> dict[str, Any]:
    """Everything the lab reads back, as JSON (the test's reference)."""
    out: dict[str, Any] = {"sessions": {}}
    for session in sorted(store.list_sessions(), key=lambda s: s.session_id):
        sid = session.session_id
        slots = store.load_slots(sid)
        chains = {
            slot.slot_id: [
                [link.model_dump(mode="json"), message.model_dump(mode="json")]
                for link, message in store.load_chain(slot.head_node_id)
            ]
            for slot in slots
            if slot.head_node_id
        }
        tails = {
            slot.slot_id: [
                [link.model_dump(mode="json"), message.model_dump(mode="json")]
                for link, message in store.load_chain_tail(slot.head_node_id, 3)
            ]
            for slot in slots
            if slot.head_node_id
        }
        checkpoints = store.list_checkpoints(sid)
        out["sessions"][sid] = {
            "record": session.model_dump(mode="json", exclude={"updated_at"}),
            "slots": [s.model_dump(mode="json", exclude={"updated_at"}) for s in slots],
            "chains": chains,
            "tails": tails,
            "checkpoints": [
                c.model_dump(mode="json", exclude={"slots"})
                | {
                    "slots": {
                        k: v.model_dump(mode="json", exclude={"updated_at"})
                        for k, v in c.slots.items()
                    }
                }
                for c in checkpoints
            ],
            "checkpoint_chains": [
                [m.id for _, m in store.load_chain(s.head_node_id)]
                for c in checkpoints
                for s in c.slots.values()
                if s.head_node_id
            ],
            "calls": [c.model_dump(mode="json") for c in store.list_calls(sid)],
        }
    out["pending"] = [p.model_dump(mode="json") for p in store.list_pending(include_resolved=True)]
    conn = store.connection
    out["tables"] = {
        table: [list(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")]
        for table in ("messages", "message_links", "sessions", "slots", "checkpoints")
    }
    return out


def build(path: Path) -> None:
    runs: list[int] = []

    def transfer(amount: int) -> str:
        """Move money."""
        runs.append(amount)
        return f"sent {amount}"

    def answer(messages: Sequence[Message]) -> Reply:
        last = messages[-1]
        if isinstance(last, UserMessage):
            if "send" in (last.content or ""):
                return ToolCall(name="transfer", arguments={"amount": 100})
            return f"noted: {last.content}"
        return "done"

    agent = Agent(
        name="bank",
        model=ScriptedModel(answer),
        tools=[Tool.from_function(transfer, requires_approval=True)],
    )
    store = SqliteStore(path)
    manager = SessionManager(store, agents=[agent], watch_interval=None)
    sid = manager.create_sync(agent)
    manager.submit_turn_sync(sid, "hello")
    manager.submit_turn_sync(sid, "remember the rent")
    manager.get_sync(sid).session_memory.set("currency", "EUR")
    approved = manager.submit_turn_sync(sid, "send 100")
    assert approved.status == "interrupted"
    (call,) = manager.pending_calls(sid)
    manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    manager.submit_turn_sync(sid, "and now?")
    manager.checkpointer.checkpoint_sync(manager.get_sync(sid), label="before the fork")
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)
    child = manager.checkpointer.fork_sync(sid, ckpts[1].ckpt_id)
    manager.submit_turn_sync(child, "a child turn")
    session = manager.get_sync(sid)
    session.fork_slot_sync("side", switch=True)
    manager.submit_turn_sync(sid, "on the side")
    session.merge_slot_sync("side", into="main", strategy="append")
    session.switch_slot_sync("main")
    manager.submit_turn_sync(sid, "after the merge")
    manager.checkpointer.rollback_sync(sid, ckpts[2].ckpt_id)
    waiting = manager.submit_turn_sync(sid, "send 100 again")
    assert waiting.status == "interrupted"
    # Hand-written ids (a snapshot written by hand, a test): not new_id, kept as text.
    other = SessionRecord(session_id="plain", agent_name="bank")
    store.create_session(other)
    first = UserMessage(id="m1", content="a hand-written id")
    second = AssistantMessage(id="m2", content="and its reply")
    store.commit(
        other,
        messages=[first, second],
        links=[
            LinkRecord(node_id="m1", parent_node_id=None, message_id="m1", depth=0),
            LinkRecord(node_id="m2", parent_node_id="m1", message_id="m2", depth=1),
            LinkRecord(node_id="n3", parent_node_id="m2", message_id="m1", depth=2),
        ],
        slots=[SlotRecord(session_id="plain", slot_id="main", head_node_id="n3")],
    )
    store.close()


def main(directory: str) -> None:
    folder = Path(directory)
    db = folder / "schema10_lab.db"
    for extra in ("", "-wal", "-shm"):
        Path(f"{db}{extra}").unlink(missing_ok=True)
    build(db)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 10
    conn.execute("PRAGMA journal_mode = DELETE")  # one file, no WAL beside it
    conn.close()
    store = SqliteStore(db, read_only=True)
    text = json.dumps(dump(store), indent=1, sort_keys=True)
    store.close()
    (folder / "schema10_lab.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
