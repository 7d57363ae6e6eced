"""Recording is cheap on the turn's path: no request hash (derived when a call is read), no
record (built when asked for), no blob a session's calls already use written again. What a
user reads back is the same as if everything had been done at once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agcore_lab import (
    Agent,
    AgentSession,
    ReplayModel,
    RuntimeBundle,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    ToolCall,
    redact_tool_results,
)
from agcore_lab.llm.call_record import load_calls, request_hash
from agcore_lab.llm.messages import Message, ToolMessage


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class _Heard:
    """A script that notes the hash of each request exactly as the model received it."""

    def __init__(self) -> None:
        self.hashes: list[str] = []
        self.tools = Agent(name="t", model=ScriptedModel(["x"]), tools=[add]).tool_specs

    def __call__(self, messages: Sequence[Message]) -> str | ToolCall:
        self.hashes.append(request_hash(list(messages), self.tools, "scripted", {}))
        if len(messages) % 4 == 2:
            return ToolCall(name="add", arguments={"a": len(messages), "b": 1})
        return f"answer {len(messages)}"


def _run(path: Path, *, listen: bool) -> tuple[SessionManager, str, _Heard]:
    manager = SessionManager(SqliteStore(path))
    if listen:
        manager.bundle.call_listeners.append(lambda call: None)
    heard = _Heard()
    sid = manager.create_sync(
        Agent(name="calc", system_prompt="You add.", model=ScriptedModel(heard), tools=[add])
    )
    for number in range(4):
        manager.submit_turn_sync(sid, f"question {number}")
    return manager, sid, heard


def test_a_turns_call_row_has_no_hash_yet_reads_and_exports_the_hash_sent(tmp_path: Path) -> None:
    manager, sid, heard = _run(tmp_path / "lean.db", listen=False)
    stored = manager.store.connection.execute("SELECT request_hash FROM model_calls").fetchall()
    assert len(stored) == len(heard.hashes) > 4 and all(bytes(h) == b"" for (h,) in stored)
    calls = manager.model_calls_sync(sid)
    assert [c.request_hash for c in calls] == heard.hashes
    assert manager.model_calls_frame(sid).request_hash.tolist() == heard.hashes
    manager.export_calls_sync(tmp_path / "calls.jsonl", sid)
    assert [c.request_hash for c in load_calls(tmp_path / "calls.jsonl")] == heard.hashes
    # With a listener the recorder hashes at once and stores it: the same values.
    eager, eager_sid, eager_heard = _run(tmp_path / "eager.db", listen=True)
    rows = eager.store.connection.execute("SELECT request_hash FROM model_calls").fetchall()
    assert all(len(bytes(h)) == 16 for (h,) in rows)
    assert [c.request_hash for c in eager.model_calls_sync(eager_sid)] == heard.hashes
    assert eager_heard.hashes == heard.hashes


def test_a_redacted_call_keeps_the_hash_of_the_request_as_sent(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "r.db")
    heard = _Heard()
    session = AgentSession(
        Agent(name="r", system_prompt="You add.", model=ScriptedModel(heard), tools=[add]),
        bundle=RuntimeBundle(store=store, call_redactor=redact_tool_results),
    )
    session.submit_turn_sync("compute")  # a tool call, then the answer to the tool result
    calls = store.list_calls(session.session_id)
    assert isinstance(calls[1].request_messages[-1], ToolMessage)
    assert calls[1].request_messages[-1].text == "[redacted]"
    assert [c.request_hash for c in calls] == heard.hashes
    stored_form = request_hash(calls[1].request_messages, calls[1].tools, "scripted", {})
    assert calls[1].request_hash != stored_form
    # So a replay of the recording answers the original (unredacted) requests.
    replayed = AgentSession(
        Agent(name="r", system_prompt="You add.", model=ReplayModel(calls), tools=[add]),
        bundle=RuntimeBundle(store=SqliteStore(tmp_path / "again.db")),
    )
    assert replayed.submit_turn_sync("compute").reply == session.messages[-1].text


def test_later_calls_of_a_session_write_nothing_beside_their_answers(tmp_path: Path) -> None:
    manager, sid, _ = _run(tmp_path / "w.db", listen=False)
    statements: list[str] = []
    manager.store.connection.set_trace_callback(statements.append)
    try:
        before = len(manager.model_calls_sync(sid))
        statements.clear()
        manager.submit_turn_sync(sid, "one more")
        manager.submit_turn_sync(sid, "and another")
    finally:
        manager.store.connection.set_trace_callback(None)
    made = len(manager.model_calls_sync(sid)) - before
    assert made >= 2
    # Each call rides on its answer's node row (schema 12), written by the turn's insert:
    # no statement of its own, and the tools and the prompt are stored once.
    assert not [s for s in statements if "call_rows" in s or "call_blobs" in s]
    turn_inserts = [s for s in statements if s.startswith("INSERT INTO chain_nodes")]
    assert len(turn_inserts) == 2 and all(", call)" in s for s in turn_inserts)
    riding = manager.store.connection.execute(
        "SELECT count(*) FROM chain_nodes WHERE call IS NOT NULL"
    ).fetchone()[0]
    assert riding == len(manager.model_calls_sync(sid))
    tools = {tuple(t.name for t in c.tools) for c in manager.model_calls_sync(sid)}
    assert tools == {("add",)}
    assert manager.model_calls_sync(sid)[-1].request_messages[0].text == "You add."


def test_a_cleanup_by_another_writer_leaves_no_call_without_its_parts(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    manager, sid, _ = _run(path, listen=False)  # this connection knows the tools are stored
    other = SqliteStore(path)  # another writer on the same file (another kernel, say)
    ckpts = [c.ckpt_id for c in manager.checkpointer.list_checkpoints_sync(sid)]
    other.delete_checkpoints(sid, ckpts)  # prunes every call of the session...
    assert other.list_calls(sid) == []
    someone = Agent(name="x", model=ScriptedModel(["hi"]))
    gone = AgentSession(someone, bundle=RuntimeBundle(store=other))
    gone.submit_turn_sync("hello")
    other.delete_session(gone.session_id)  # ...and cleans up the blobs no call uses now...
    blobs = "SELECT count(*) FROM call_blobs"
    # ...but those pinned to a session that lives (schema 13): the tools and the prompt.
    assert other.connection.execute(blobs).fetchone()[0] == 2
    manager.submit_turn_sync(sid, "after the cleanup")
    calls = manager.model_calls_sync(sid)  # the new turn's calls: their parts read back
    assert calls and all([t.name for t in c.tools] == ["add"] for c in calls)
    assert all(c.request_messages[0].text == "You add." for c in calls)
    manager.destroy_sync(sid)  # the session goes: its pins, and then its blobs
    assert other.connection.execute(blobs).fetchone()[0] == 0


_CLEANER = """
import sys
from agcore_lab import Agent, AgentSession, RuntimeBundle, ScriptedModel, SqliteStore
path, sid = sys.argv[1], sys.argv[2]
store = SqliteStore(path)
store.delete_checkpoints(sid)  # every call of the live session goes...
other = AgentSession(
    Agent(name="o", system_prompt="You add.", model=ScriptedModel(["hi"])),
    bundle=RuntimeBundle(store=store),
)
other.submit_turn_sync("hello")  # ...and a session sharing its prompt comes and goes
store.delete_session(other.session_id)
print(store.connection.execute("SELECT count(*) FROM call_blobs").fetchone()[0])
"""


def test_another_process_pruning_and_cleaning_up_leaves_the_live_sessions_blobs(
    tmp_path: Path,
) -> None:
    # This process's connection knows the session's blobs are stored and does not look again
    # (no read per commit): another process prunes all the session's calls and deletes a
    # session that used the same prompt, which cleans up the blobs no call uses. The blobs
    # the live session pinned stay, so its next calls read back whole.
    import subprocess
    import sys

    path = tmp_path / "shared.db"
    manager, sid, heard = _run(path, listen=False)
    done = subprocess.run(
        [sys.executable, "-c", _CLEANER, str(path), sid],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.split() == ["2"]  # the tools and the prompt: pinned to the session
    assert manager.model_calls_sync(sid) == []
    for number in range(3):
        manager.submit_turn_sync(sid, f"after the cleanup {number}")
    calls = manager.model_calls_sync(sid)
    assert len(calls) >= 3
    assert all([t.name for t in c.tools] == ["add"] for c in calls)
    assert all(c.request_messages[0].text == "You add." for c in calls)
    assert [c.request_hash for c in calls] == heard.hashes[-len(calls) :]  # as the model saw it
