"""Schema 12: a turn's usual model call rides on its answer's ``chain_nodes`` row; any other
call keeps a row of ``call_rows``. Whichever way a call is kept, it reads back the same —
through the store (``list_calls``, the frame, export) and through the ``model_calls`` view —
and prune, delete and copies treat both alike."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from agcore_lab import (
    Agent,
    AgentSession,
    RuntimeBundle,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    ToolCall,
)
from agcore_lab.llm.base import ChatResponse, ToolSpec
from agcore_lab.llm.messages import AssistantMessage, Message
from agcore_lab.llm.usage import Usage
from agcore_lab.store.transfer import migrate_store

DATA = Path(__file__).resolve().parents[2] / "data"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script(messages: Sequence[Message]) -> str | ToolCall:
    if messages[-1].role == "user" and "add" in messages[-1].text:
        return ToolCall(name="add", arguments={"a": len(messages), "b": 1})
    return f"answer {len(messages)}"


def _lab(path: Path, turns: int = 6) -> tuple[SessionManager, str]:
    manager = SessionManager(SqliteStore(path), watch_interval=None)
    sid = manager.create_sync(
        Agent(name="calc", system_prompt="You add.", model=ScriptedModel(_script), tools=[add])
    )
    for number in range(turns):
        manager.submit_turn_sync(sid, f"please add {number}" if number % 2 else f"hi {number}")
    return manager, sid


def _count(conn: sqlite3.Connection, sql: str) -> int:
    return int(conn.execute(sql).fetchone()[0])


def _view(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT * FROM model_calls ORDER BY call_id").fetchall()
    finally:
        conn.close()


def test_riding_calls_read_back_exactly_as_rows_of_their_own(tmp_path: Path) -> None:
    manager, sid = _lab(tmp_path / "nodes.db")
    conn = manager.store.connection
    calls = manager.model_calls_sync(sid)
    assert len(calls) == 9  # six turns, three of them with a tool step
    assert _count(conn, "SELECT count(*) FROM call_rows") == 0
    assert _count(conn, "SELECT count(*) FROM chain_nodes WHERE call IS NOT NULL") == 9
    assert calls[1].response is not None and calls[1].response.tool_calls[0].name == "add"
    manager.store.close()
    # A copy writes every call as a row of call_rows: the same records, the same view rows.
    report = migrate_store(tmp_path / "nodes.db", tmp_path / "rows.db")
    assert report.tables["model_calls"] == 9
    copy = SqliteStore(tmp_path / "rows.db")
    assert _count(copy.connection, "SELECT count(*) FROM call_rows") == 9
    assert _count(copy.connection, "SELECT count(*) FROM chain_nodes WHERE call IS NOT NULL") == 0
    assert copy.list_calls(sid) == calls
    assert _view(tmp_path / "rows.db") == _view(tmp_path / "nodes.db")
    copy.close()


def test_the_view_gives_each_riding_call_the_columns_a_row_had(tmp_path: Path) -> None:
    manager, sid = _lab(tmp_path / "v.db", turns=2)
    calls = manager.model_calls_sync(sid)
    frame = manager.store.read_dataframe("SELECT * FROM model_calls ORDER BY call_id")
    assert frame.call_id.tolist() == [c.call_id for c in calls]
    assert frame.response_id.tolist() == [c.response.id for c in calls if c.response]
    assert frame.kind.unique().tolist() == ["turn"] and frame.status.unique().tolist() == ["ok"]
    assert frame.prompt_tokens.tolist() == [c.usage.prompt_tokens for c in calls]
    assert frame.started_us.tolist() == [int(c.started_at.timestamp() * 1_000_000) for c in calls]
    assert frame.parts_json.tolist()[0].startswith("[1,")  # one message of history
    assert all(bytes(h) == b"" for h in frame.request_hash)  # derived when read
    manager.store.close()


def test_rows_and_riding_calls_merge_in_call_order(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db")
    heard: list[str] = []
    bundle = RuntimeBundle(store=store)
    session = AgentSession(
        Agent(name="m", model=ScriptedModel(["one", "two", "three", "four"])), bundle=bundle
    )
    session.submit_turn_sync("a")  # rides
    bundle.call_listeners.append(lambda call: heard.append(call.call_id))
    session.submit_turn_sync("b")  # a listener heard it: its hash is stored, a row
    bundle.call_listeners.clear()
    session.submit_turn_sync("c")  # rides
    conn = store.connection
    assert _count(conn, "SELECT count(*) FROM call_rows") == 1
    calls = store.list_calls(session.session_id)
    assert [c.response.text for c in calls if c.response] == ["one", "two", "three"]
    assert calls[1].call_id == heard[0]
    assert [c.call_id for c in store.list_calls(session.session_id, last=2)] == [
        c.call_id for c in calls[1:]
    ]
    for call in calls:  # by id, whichever way it is kept
        assert store.list_calls(call_id=call.call_id) == [call]
    assert store.list_calls(session.session_id, turn_index=3) == [calls[2]]
    assert store.list_calls(call_id="call_0000000000000000a") == []


class _OwnIds:
    """A model whose answers carry ids of its own (not ``new_id``'s)."""

    model_name = "own"

    def __init__(self) -> None:
        self.count = 0

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        self.count += 1
        message = AssistantMessage(id=f"answer-{self.count}", content=f"reply {self.count}")
        usage = Usage(prompt_tokens=3, completion_tokens=2)
        return ChatResponse(message=message, usage=usage, model="own")

    def stream(self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()):  # type: ignore[no-untyped-def]
        raise NotImplementedError


def test_an_answer_stored_the_careful_way_keeps_its_call_as_a_row(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "c.db")
    session = AgentSession(Agent(name="o", model=_OwnIds()), store=store)  # type: ignore[arg-type]
    session.submit_turn_sync("first")
    session.submit_turn_sync("second")
    assert _count(store.connection, "SELECT count(*) FROM call_rows") == 2
    calls = store.list_calls(session.session_id)
    assert [c.response.id for c in calls if c.response] == ["answer-1", "answer-2"]
    assert calls[1].request_messages == session.messages[:3]
    assert not any(c.abandoned for c in calls)


def test_prune_and_delete_clear_riding_calls_and_keep_the_messages(tmp_path: Path) -> None:
    manager, sid = _lab(tmp_path / "p.db", turns=4)
    conn = manager.store.connection
    ckpts = [c.ckpt_id for c in manager.checkpointer.list_checkpoints_sync(sid)]
    calls = manager.model_calls_sync(sid)
    led = {c.ckpt_id for c in calls}
    oldest = sorted(led)[0]
    gone = [c for c in calls if c.ckpt_id == oldest]
    manager.store.delete_checkpoints(sid, [oldest])
    assert manager.model_calls_sync(sid) == [c for c in calls if c.ckpt_id != oldest]
    assert _count(conn, "SELECT count(*) FROM chain_nodes WHERE call IS NOT NULL") == len(
        calls
    ) - len(gone)
    assert len(manager.get_sync(sid).messages) == 4 * 2 + 2 * 2  # the messages stay
    assert oldest in ckpts
    # A fork shares the parent's chain: deleting the parent keeps the nodes, not its calls.
    child = manager.checkpointer.fork_sync(sid, ckpts[0])
    manager.destroy_sync(sid)
    assert _count(conn, "SELECT count(*) FROM chain_nodes WHERE call IS NOT NULL") == 0
    assert manager.model_calls_frame().empty
    assert manager.get_sync(child).messages  # its history is still there
    assert _count(conn, "SELECT count(*) FROM chain_nodes") > 0
    manager.destroy_sync(child)
    assert _count(conn, "SELECT count(*) FROM call_blobs") == 0


def test_an_old_lab_keeps_its_call_rows_and_takes_new_calls(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    shutil.copy(DATA / "schema10_lab.db", path)
    store = SqliteStore(path)  # migrated to schema 12 in place
    conn = store.connection
    old = store.list_calls()
    assert len(old) == _count(conn, "SELECT count(*) FROM call_rows") == 9
    session = AgentSession(Agent(name="x", model=ScriptedModel(["again"])), store=store)
    session.submit_turn_sync("one more")
    # This lab holds hand-written ids (kept as text): a turn's rows take the careful way,
    # and its call keeps a row of its own.
    assert _count(conn, "SELECT count(*) FROM text_ids") > 0
    assert _count(conn, "SELECT count(*) FROM call_rows") == 10
    both = store.list_calls()
    assert both[:-1] == old  # the old rows read back as before, oldest first
    assert both[-1].session_id == session.session_id and both[-1].response is not None
    assert both[-1].response.text == "again"
    assert len(_view(path)) == 10
    store.close()
