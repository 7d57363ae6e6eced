"""Schema 11's hot reads go to the lean tables, never to the views that keep the old columns.

``messages``, ``message_links`` and ``checkpoints`` are views over ``chain_nodes`` and
``checkpoint_rows`` that compute the old text columns; a lookup by id through them scans the
whole table (and a recursive chain walk over them scans it once per step). A fresh load of a
history, the parent of a new checkpoint and the call log's reads must not touch them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore, ToolCall

T = TypeVar("T")

# ``model_calls`` too (schema 12): a view over call_rows and the calls riding on node rows.
_VIEWS = re.compile(
    r"\b(FROM|JOIN)\s+(messages|message_links|checkpoints|checkpoints_keyed|model_calls)\b"
)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _reply(messages: object) -> str | ToolCall:
    count = len(messages)  # type: ignore[arg-type]
    if count % 4 == 2:
        return ToolCall(name="add", arguments={"a": count, "b": 1})
    return f"answer {count}"


def _lab(path: Path, turns: int = 6) -> tuple[SessionManager, str]:
    manager = SessionManager(SqliteStore(path))
    agent = Agent(name="calc", system_prompt="You add.", model=ScriptedModel(_reply), tools=[add])
    sid = manager.create_sync(agent)
    for number in range(turns):
        manager.submit_turn_sync(sid, f"question {number}")
    return manager, sid


def _traced(store: SqliteStore, read: Callable[[], T]) -> tuple[T, list[str]]:
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    try:
        return read(), statements
    finally:
        store.connection.set_trace_callback(None)


def _through_views(statements: list[str]) -> list[str]:
    return [sql for sql in statements if _VIEWS.search(sql)]


def _head(store: SqliteStore, sid: str) -> str:
    (slot,) = [s for s in store.load_slots(sid) if s.head_node_id]
    assert slot.head_node_id is not None
    return slot.head_node_id


def test_a_loaded_history_walks_the_chain_nodes_not_the_views(tmp_path: Path) -> None:
    manager, sid = _lab(tmp_path / "h.db")
    store = manager.store
    assert isinstance(store, SqliteStore)
    head = _head(store, sid)
    (history, nodes), statements = _traced(store, lambda: store.load_chain_history(head))
    assert statements and _through_views(statements) == []
    chain = store.load_chain(head)
    assert list(history) == [message for _, message in chain]
    assert nodes == {i: link.node_id for i, (link, m) in enumerate(chain) if link.node_id != m.id}
    # Statements do not grow with the chain: one walk, not one lookup per message.
    more, _ = _lab(tmp_path / "longer.db", turns=30)
    longer = more.store
    assert isinstance(longer, SqliteStore)
    long_head = _head(longer, longer.list_sessions()[0].session_id)
    (long_history, _), long_statements = _traced(
        longer, lambda: longer.load_chain_history(long_head)
    )
    assert len(long_history) > 4 * len(history)
    assert len(long_statements) == len(statements)


def test_the_latest_checkpoint_is_read_from_the_lean_rows(tmp_path: Path) -> None:
    manager, sid = _lab(tmp_path / "c.db")
    store = manager.store
    assert isinstance(store, SqliteStore)
    latest, statements = _traced(store, lambda: store.latest_checkpoint_id(sid))
    assert latest == store.list_checkpoints(sid)[0].ckpt_id
    assert statements and _through_views(statements) == []
    assert store.latest_checkpoint_id("ses_unknown") is None


def test_a_turn_finds_its_checkpoints_parent_without_the_views(tmp_path: Path) -> None:
    manager, sid = _lab(tmp_path / "t.db", turns=2)
    store = manager.store
    assert isinstance(store, SqliteStore)
    before = store.latest_checkpoint_id(sid)
    _, statements = _traced(store, lambda: manager.submit_turn_sync(sid, "one more"))
    assert _through_views(statements) == []
    newest = store.list_checkpoints(sid)[0]
    assert newest.parent_ckpt_id == before != newest.ckpt_id


def test_the_call_log_reads_responses_and_checkpoints_without_the_views(tmp_path: Path) -> None:
    manager, sid = _lab(tmp_path / "calls.db")
    store = manager.store
    assert isinstance(store, SqliteStore)
    calls, statements = _traced(store, lambda: store.list_calls(sid))
    assert len(calls) > 6 and _through_views(statements) == []
    ckpts = {c.ckpt_id for c in store.list_checkpoints(sid)}
    assert all(call.ckpt_id in ckpts for call in calls[:-1])
    assert all(call.response is not None and call.request_hash for call in calls)
