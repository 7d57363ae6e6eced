"""Every model request a session sends is recorded: what the model saw, what came back."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    ModelCall,
    RuntimeBundle,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    ToolCall,
    redact_tool_results,
)
from agcore_lab.agent.slots import SlotMode
from agcore_lab.agent.summary import SummaryConfig
from agcore_lab.errors import InvalidInputError, ModelError, SessionNotFoundError
from agcore_lab.llm.base import ChatResponse, ModelStreamEvent, ToolSpec
from agcore_lab.llm.call_record import note_retry
from agcore_lab.llm.messages import Message, ToolMessage


def _call_bytes(conn: sqlite3.Connection) -> int:
    """The bytes the call log holds beyond the messages: its own rows (``call_rows``) and
    the ``call`` column of the node rows a turn's common call rides on (schema 12)."""
    rows = conn.execute("select sum(payload) from dbstat where name = 'call_rows'").fetchone()[0]
    riding = conn.execute(
        "select sum(length(cast(call as blob)) + 1) from chain_nodes where call is not null"
    ).fetchone()[0]
    return int(rows or 0) + int(riding or 0)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_the_issue_snippet_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # -- the snippet, verbatim -------------------------------------------------------------
    from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore, ToolCall

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    model = ScriptedModel([ToolCall(name="add", arguments={"a": 2, "b": 3}), "5"])
    manager = SessionManager(SqliteStore("lab.db"))
    sid = manager.create_sync(
        Agent(name="calc", system_prompt="You add.", model=model, tools=[add])
    )
    manager.submit_turn_sync(sid, "2 + 3?")
    calls = manager.model_calls_sync(sid)  # oldest first: one per model request
    assert len(calls) == 2 and calls[0].request_messages[0].role == "system"
    assert calls[0].response.tool_calls[0].name == "add" and calls[1].response.content == "5"
    df = manager.model_calls_frame(sid)  # one row per call, flat columns
    # ----------------------------------------------------------------------------------------
    assert list(df.turn_index) == [1, 1]
    assert list(df.tool_calls) == ["add", ""]
    assert list(df.status) == ["ok", "ok"]
    assert df.message_count.tolist() == [2, 4]
    assert (df.prompt_tokens > 0).all() and (df.latency_ms >= 0).all()
    # The second request carried the tool call and its result, exactly as sent.
    second = calls[1].request_messages
    assert [m.role for m in second] == ["system", "user", "assistant", "tool"]
    assert isinstance(second[3], ToolMessage) and second[3].content == "5"
    assert calls[0].tools[0].name == "add" and calls[0].injected == {0: "system_prompt"}
    # Each call is linked to the checkpoint the turn led to.
    latest = manager.checkpointer.list_checkpoints_sync(sid)[0]
    assert {c.ckpt_id for c in calls} == {latest.ckpt_id}
    # A new process sees the same log.
    again = SessionManager(SqliteStore("lab.db")).model_calls_sync(sid)
    assert [c.model_dump() for c in again] == [c.model_dump() for c in calls]


def _history_of(calls: Sequence[ModelCall]) -> list[list[str]]:
    return [[m.text for m in c.request_messages] for c in calls]


def test_messages_are_shared_with_the_chains_not_copied(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "lab.db")
    session = AgentSession(
        Agent(name="w", system_prompt="Be brief. " * 50, model=ScriptedModel()), store=store
    )
    for i in range(30):
        session.submit_turn_sync(f"message number {i} " + "x" * 200)
    calls = store.list_calls(session.session_id)
    assert len(calls) == 30
    # The 30th request holds the whole history, as sent.
    assert len(calls[-1].request_messages) == 1 + 59
    assert calls[-1].request_messages[1:] == session.messages[:-1]
    conn = store.connection
    # The long system prompt is stored once, and no message content is copied into the log.
    assert conn.execute("select count(*) from call_blobs").fetchone()[0] == 1
    assert _call_bytes(conn) / 30 < 200  # a few bytes per call, whatever the history length


def test_streaming_calls_record_time_to_first_token(tmp_path: Path) -> None:
    session = AgentSession(
        Agent(name="s", model=ScriptedModel(["a fairly long streamed answer"], chunk_size=3)),
        store=SqliteStore(tmp_path / "s.db"),
    )
    events = list(session.submit_turn_stream_sync("hi"))
    (call,) = session.store.list_calls(session.session_id)
    assert call.streamed and call.ttft_s is not None and 0 <= call.ttft_s <= call.latency_s
    assert call.response is not None and call.response.content == "a fairly long streamed answer"
    assert len(events) > 3


class _Broken:
    """A model that fails on its second request."""

    model_name = "broken"

    def __init__(self) -> None:
        self.inner = ScriptedModel([ToolCall(name="add", arguments={"a": 1, "b": 2})])
        self.requests = 0

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        self.requests += 1
        if self.requests == 2:
            raise ModelError("the backend is down")
        return await self.inner.complete(messages, tools=tools)

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[ModelStreamEvent]:
        return self.inner.stream(messages, tools=tools)


def test_a_failed_turn_keeps_its_calls_with_the_error(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "f.db")
    session = AgentSession(Agent(name="f", model=_Broken(), tools=[add]), store=store)
    with pytest.raises(ModelError):
        session.submit_turn_sync("1 + 2?")
    assert session.turn_index == 0 and session.messages == []  # the turn did not commit
    first, second = store.list_calls(session.session_id)
    assert first.status == "ok" and first.response is not None
    assert first.response.tool_calls[0].name == "add"
    assert second.status == "error" and second.error == "ModelError: the backend is down"
    assert second.response is None
    # The uncommitted messages were kept by content: the request reads back as it was sent.
    assert [m.role for m in second.request_messages] == ["user", "assistant", "tool"]
    assert second.request_messages[2].text == "3"
    assert not first.abandoned and not second.abandoned


def test_a_cancelled_turn_records_its_call_as_cancelled(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "c.db")
    session = AgentSession(Agent(name="c", model=ScriptedModel(latency=5)), store=store)

    async def cancel_it() -> None:
        task = asyncio.create_task(session.submit_turn("hi"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())
    (call,) = store.list_calls(session.session_id)
    assert call.status == "error" and call.error is not None
    assert call.error.startswith("cancelled")
    assert session.turn_index == 0


def test_recording_can_be_turned_off_per_agent_and_per_manager(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "o.db")
    manager = SessionManager(store)
    quiet = manager.create_sync(Agent(name="quiet", model=ScriptedModel(), record_calls=False))
    manager.submit_turn_sync(quiet, "hi")
    assert manager.model_calls_sync(quiet) == []
    loud = manager.create_sync(Agent(name="loud", model=ScriptedModel()))
    manager.record_calls = False
    manager.submit_turn_sync(loud, "one")
    manager.record_calls = True
    manager.submit_turn_sync(loud, "two")
    assert [c.turn_index for c in manager.model_calls_sync(loud)] == [2]
    assert store.connection.execute("select count(*) from model_calls").fetchone()[0] == 1


def test_a_redactor_drops_fields_before_they_are_stored(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "r.db")
    secret_model = ScriptedModel([ToolCall(name="add", arguments={"a": 40, "b": 2}), "done"])
    session = AgentSession(
        Agent(name="r", model=secret_model, tools=[add]),
        bundle=RuntimeBundle(store=store, call_redactor=redact_tool_results),
    )
    session.submit_turn_sync("compute")
    calls = store.list_calls(session.session_id)
    tool = calls[1].request_messages[-1]
    assert isinstance(tool, ToolMessage) and tool.content == "[redacted]"
    assert session.messages[2].text == "42"  # the history itself is untouched
    # The tool result is nowhere in the call log's own tables.
    blobs = " ".join(b for (b,) in store.connection.execute("select body from call_blobs"))
    assert "42" not in blobs and "[redacted]" in blobs
    # Dropping a call entirely:
    dropped = AgentSession(
        Agent(name="d", model=ScriptedModel()),
        bundle=RuntimeBundle(store=store, call_redactor=lambda call: None),
    )
    dropped.submit_turn_sync("hi")
    assert store.list_calls(dropped.session_id) == []


def test_summary_calls_are_recorded_with_their_kind(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "sum.db")
    config = SummaryConfig(max_context_tokens=60, trigger_token_ratio=0.5, debounce_turns=0)
    session = AgentSession(
        Agent(name="s", model=ScriptedModel(), summary_config=config), store=store
    )
    session.set_slot_mode_sync("focused")  # a summary becomes the context of Focused slots
    for i in range(3):
        session.submit_turn_sync(f"tell me about item {i} in some detail please")
    calls = store.list_calls(session.session_id)
    assert [c.kind for c in calls] == ["turn", "summary"] * 3
    first = calls[1]
    # The default prompt is a template: one user message with the transcript in it.
    assert first.turn_index == 1 and first.request_messages[0].role == "user"
    assert "user: tell me about item 0" in first.request_messages[0].text
    assert first.response is not None and first.response.content
    # Later turns run Focused: their requests carry the injected summary, marked as such.
    second_turn = calls[2]
    assert session.current_slot.mode is SlotMode.Focused
    assert second_turn.injected == {0: "summary"}
    assert second_turn.request_messages[0].text.startswith("Summary of the earlier")
    assert first.response.content in second_turn.request_messages[0].text


def test_rollback_keeps_abandoned_calls_visible_and_prune_removes_them(tmp_path: Path) -> None:
    manager = SessionManager(SqliteStore(tmp_path / "t.db"))
    sid = manager.create_sync(Agent(name="t", model=ScriptedModel()))
    for i in range(3):
        manager.submit_turn_sync(sid, f"turn {i}")
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)  # newest first
    after_first = next(c for c in ckpts if c.turn_index == 1)
    manager.checkpointer.rollback_sync(sid, after_first.ckpt_id)
    manager.submit_turn_sync(sid, "a new turn 2")
    calls = manager.model_calls_sync(sid)
    assert [(c.turn_index, c.abandoned) for c in calls] == [
        (1, False),
        (2, True),
        (3, True),
        (2, False),
    ]
    assert manager.model_calls_frame(sid).abandoned.tolist() == [False, True, True, False]
    # Pruning the old checkpoints removes the calls that led to them.
    report = manager.checkpointer.prune_sync(sid, keep_last=1)
    assert report.removed
    kept = manager.model_calls_sync(sid)
    assert [c.request_messages[-1].text for c in kept] == ["a new turn 2"]
    remaining = {c.ckpt_id for c in manager.checkpointer.list_checkpoints_sync(sid)}
    assert {c.ckpt_id for c in kept} <= remaining


def test_destroying_a_session_deletes_its_calls(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "d.db")
    manager = SessionManager(store)
    sid = manager.create_sync(Agent(name="d", system_prompt="unique prompt", model=ScriptedModel()))
    manager.submit_turn_sync(sid, "hi")
    manager.destroy_sync(sid)
    conn = store.connection
    assert conn.execute("select count(*) from model_calls").fetchone()[0] == 0
    assert conn.execute("select count(*) from call_blobs").fetchone()[0] == 0


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    manager = SessionManager(SqliteStore(tmp_path / "b.db"))
    with pytest.raises(SessionNotFoundError):
        manager.model_calls_sync("ses_nope")
    sid = manager.create_sync(Agent(name="b", model=ScriptedModel()))
    with pytest.raises(InvalidInputError, match="last must be a positive"):
        manager.model_calls_sync(sid, last=0)
    from agcore_lab import CallNotFoundError

    with pytest.raises(CallNotFoundError):
        manager.get_call_sync("call_nope")


def test_last_and_turn_filters(tmp_path: Path) -> None:
    manager = SessionManager(SqliteStore(tmp_path / "l.db"))
    sid = manager.create_sync(Agent(name="l", model=ScriptedModel()))
    for i in range(4):
        manager.submit_turn_sync(sid, f"turn {i}")
    assert [c.turn_index for c in manager.model_calls_sync(sid, last=2)] == [3, 4]
    assert [c.turn_index for c in manager.model_calls_sync(sid, turn_index=2)] == [2]
    everything = manager.model_calls_frame()
    assert len(everything) == 4 and set(everything.agent_name) == {"l"}
    one = manager.model_calls_sync(sid)[1]
    assert manager.get_call_sync(one.call_id) == one


def test_an_old_database_file_opens_and_gains_the_call_log(tmp_path: Path) -> None:
    from agcore_lab.store import migrations

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for number, migrate in enumerate(migrations.MIGRATIONS[:-1], start=1):
        migrate(conn)
        conn.execute(f"PRAGMA user_version = {number}")
    conn.close()
    store = SqliteStore(path)
    assert store.schema_version == len(migrations.MIGRATIONS)
    session = AgentSession(Agent(name="o", model=ScriptedModel(["ok"])), store=store)
    session.submit_turn_sync("hi")
    assert [c.response.content for c in store.list_calls() if c.response] == ["ok"]


def test_an_interrupted_turn_and_its_resumption_are_one_turn_of_calls(tmp_path: Path) -> None:
    from agcore_lab import Tool

    def transfer(amount: int) -> str:
        """Move money."""
        return f"moved {amount}"

    model = ScriptedModel([ToolCall(name="transfer", arguments={"amount": 5}), "Done."])
    manager = SessionManager(SqliteStore(tmp_path / "a.db"))
    agent = Agent(
        name="bank", model=model, tools=[Tool.from_function(transfer, requires_approval=True)]
    )
    sid = manager.create_sync(agent)
    result = manager.submit_turn_sync(sid, "pay 5")
    call = result.pending_tool_call
    assert call is not None
    assert [c.turn_index for c in manager.model_calls_sync(sid)] == [1]
    final = manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert final.reply == "Done."
    calls = manager.model_calls_sync(sid)
    assert [c.turn_index for c in calls] == [1, 1]
    assert calls[1].request_messages[-1].text == "moved 5"


def test_sub_agent_calls_are_recorded_in_the_child(tmp_path: Path) -> None:
    manager = SessionManager(SqliteStore(tmp_path / "d.db"))
    parent = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
    result = manager.dispatch_sync(parent, Agent(name="helper", model=ScriptedModel()), "help me")
    (call,) = manager.model_calls_sync(result.child_id)
    assert call.request_messages[-1].text == "help me"
    frame = manager.model_calls_frame()
    assert set(frame.agent_name) == {"helper"}


def test_a_summarize_merge_is_recorded_as_a_merge_call(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "merge.db")
    model = ScriptedModel(["main answer", "side answer", "the side work, condensed"])
    session = AgentSession(Agent(name="m", model=model), store=store)
    session.submit_turn_sync("start")
    session.fork_slot_sync("side", switch=True, strategy="summarize")
    session.submit_turn_sync("explore a detour")
    merged = session.merge_slot_sync("side")
    calls = store.list_calls(session.session_id)
    assert [c.kind for c in calls] == ["turn", "turn", "merge"]
    merge = calls[-1]
    # The exact request the model got: the child's new messages in a transcript.
    assert merge.slot_id == "side" and merge.status == "ok"
    assert "explore a detour" in merge.request_messages[-1].text
    assert "side answer" in merge.request_messages[-1].text
    assert "start" not in merge.request_messages[-1].text  # shared history is not re-sent
    assert merge.response is not None and merge.response.content == "the side work, condensed"
    assert merge.usage.prompt_tokens > 0
    # The merged summary message in the target carries the same text.
    assert merged.messages[-1].text.endswith("the side work, condensed")
    # Recording off: the merge still happens, nothing is recorded.
    quiet = AgentSession(
        Agent(name="q", model=ScriptedModel(["a", "b", "c"]), record_calls=False), store=store
    )
    quiet.submit_turn_sync("start")
    quiet.fork_slot_sync("side", switch=True, strategy="summarize")
    quiet.submit_turn_sync("detour")
    quiet.merge_slot_sync("side")
    assert store.list_calls(quiet.session_id) == []


def test_destroying_a_session_keeps_the_blobs_another_session_still_uses(tmp_path: Path) -> None:
    # The system prompt and the tools are stored once for both sessions; destroying one must
    # not take them from the other (its calls are stored in the compact array form).
    store = SqliteStore(tmp_path / "shared.db")
    manager = SessionManager(store)
    agent = Agent(name="both", system_prompt="shared prompt", model=ScriptedModel(), tools=[add])
    gone, kept = manager.create_sync(agent), manager.create_sync(agent)
    manager.submit_turn_sync(gone, "hi")
    manager.submit_turn_sync(kept, "hello")
    before = store.list_calls(kept)
    assert store.connection.execute("select count(*) from call_blobs").fetchone()[0] == 2
    manager.destroy_sync(gone)
    after = store.list_calls(kept)
    assert [c.request_messages for c in after] == [c.request_messages for c in before]
    assert after[0].request_messages[0].text == "shared prompt"
    assert [t.name for t in after[0].tools] == ["add"]
    assert store.connection.execute("select count(*) from call_blobs").fetchone()[0] == 2


def test_a_turns_call_row_is_small_with_a_system_prompt_and_tools(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "small.db")
    session = AgentSession(
        Agent(name="w", system_prompt="Be brief.", model=ScriptedModel(), tools=[add]),
        store=store,
    )
    for i in range(200):
        session.submit_turn_sync(f"question {i}")
    # ids, counts, times and where the request sits in the chains: no message content, no
    # key names for the usual parts, no session, anchor or answer id (the node row's own).
    assert _call_bytes(store.connection) / 200 < 120  # (212 with the anchor and key names,
    # 140 as a row of its own)
    call = store.list_calls(session.session_id)[-1]
    assert [m.role for m in call.request_messages[:2]] == ["system", "user"]
    assert call.injected == {0: "system_prompt"} and call.tools[0].name == "add"


class _Retrying:
    """A model whose backend retries its ``n``-th request ``schedule.get(n, every)`` times,
    yielding to the event loop between retries (so concurrent turns interleave theirs)."""

    model_name = "retrying"

    def __init__(
        self, replies: list[str | ToolCall], schedule: dict[int, int] | None = None, every: int = 0
    ) -> None:
        self.inner = ScriptedModel(replies)
        self.schedule, self.every = schedule or {}, every
        self.requests = 0

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        self.requests += 1
        for _ in range(self.schedule.get(self.requests, self.every)):
            note_retry()
            await asyncio.sleep(0)
        return await self.inner.complete(messages, tools=tools)

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[ModelStreamEvent]:
        return self.inner.stream(messages, tools=tools)


def test_each_call_counts_its_own_retries(tmp_path: Path) -> None:
    session = AgentSession(
        Agent(
            name="r",
            model=_Retrying(
                [ToolCall(name="add", arguments={"a": 1, "b": 2}), "3", "again"], {1: 2, 3: 1}
            ),
            tools=[add],
        ),
        store=SqliteStore(tmp_path / "r.db"),
    )
    session.submit_turn_sync("1 + 2?")  # two calls: retried twice, then not at all
    session.submit_turn_sync("again?")  # one call, retried once
    calls = session.store.list_calls(session.session_id)
    assert [c.retries for c in calls] == [2, 0, 1]


def test_concurrent_turns_of_two_sessions_count_their_own_retries(tmp_path: Path) -> None:
    # A session's turns share one retry counter (agent/recording.py): the turns of another
    # session, running at the same time in tasks started from the same context, must not
    # count into it, nor it into theirs.
    store = SqliteStore(tmp_path / "concurrent.db")
    three = AgentSession(Agent(name="three", model=_Retrying(["ok"] * 3, every=3)), store=store)
    one = AgentSession(Agent(name="one", model=_Retrying(["ok"] * 2, every=1)), store=store)

    async def run() -> None:
        await three.submit_turn("first")  # this context's counter is now the session's
        await asyncio.gather(three.submit_turn("second"), one.submit_turn("first"))
        await asyncio.gather(one.submit_turn("second"), three.submit_turn("third"))

    asyncio.run(run())
    assert [c.retries for c in store.list_calls(three.session_id)] == [3, 3, 3]
    assert [c.retries for c in store.list_calls(one.session_id)] == [1, 1]
