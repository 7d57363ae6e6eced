"""``AgentSession``: turns, the tool loop, streaming, hooks, persistence and concurrency."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    AssistantMessage,
    ChatResponse,
    InvalidInputError,
    MaxToolRoundsError,
    Message,
    ModelError,
    ModelPrice,
    PriceTable,
    RuntimeBundle,
    ScriptedModel,
    SessionNotFoundError,
    SqliteStore,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallStarted,
    ToolMessage,
    ToolResultReady,
    TurnDone,
    TurnResult,
    UserMessage,
)
from agcore_lab.agent.slots import SlotMode
from agcore_lab.aio import submit
from agcore_lab.errors import ConfigurationError
from agcore_lab.llm.base import ModelStreamEvent, ToolSpec


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class BrokenModel:
    """A model whose every call fails, after ``ok`` calls answered by ``inner``."""

    def __init__(self, inner: ScriptedModel | None = None, ok: int = 0) -> None:
        self.inner = inner or ScriptedModel()
        self.ok = ok

    @property
    def model_name(self) -> str:
        return "broken"

    def _spend(self) -> None:
        if self.ok <= 0:
            raise ModelError("the model is down")
        self.ok -= 1

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        self._spend()
        return await self.inner.complete(messages, tools=tools)

    async def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[ModelStreamEvent]:
        self._spend()
        async for event in self.inner.stream(messages, tools=tools):
            yield event


def _stored(session: AgentSession) -> tuple[Any, ...]:
    """Everything the store holds about a session, for before/after comparisons."""
    store = session.store
    assert isinstance(store, SqliteStore)
    record = store.get_session(session.session_id)
    assert record is not None
    rows = store.connection.execute(
        "SELECT count(*) FROM messages WHERE session_id = ?", (session.session_id,)
    ).fetchone()[0]
    links = store.connection.execute(
        "SELECT count(*) FROM message_links WHERE session_id = ?", (session.session_id,)
    ).fetchone()[0]
    slots = [s.model_dump(exclude={"updated_at"}) for s in store.load_slots(session.session_id)]
    record_state = record.model_dump(exclude={"updated_at"})
    return record_state, rows, links, slots, store.memory_version(session.session_id)


def _live(session: AgentSession) -> tuple[Any, ...]:
    return (
        session.turn_index,
        session.current_slot_id,
        {sid: list(slot.messages) for sid, slot in session.slots.items()},
        {sid: slot.head_node_id for sid, slot in session.slots.items()},
        session.cost_tracker.model_dump(),
    )


def test_acceptance_snippet_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    # --- the snippet from the issue, unchanged ---
    from agcore_lab import Agent, AgentSession, ScriptedModel, SqliteStore, ToolCall

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    model = ScriptedModel([ToolCall(name="add", arguments={"a": 2, "b": 3}), "2 + 3 = 5"])
    agent = Agent(name="calc", system_prompt="You add numbers.", model=model, tools=[add])
    session = AgentSession(agent, store=SqliteStore("lab.db"))
    result = session.submit_turn_sync("What is 2 + 3?")
    assert result.reply == "2 + 3 = 5" and result.tool_calls[0].name == "add"
    # --- end of the snippet ---

    assert (tmp_path / "lab.db").exists()
    assert [m.text for m in result.tool_results] == ["5"]
    reopened = SqliteStore(tmp_path / "lab.db")
    stored = reopened.get_session(session.session_id)
    assert stored is not None and stored.agent_name == "calc" and stored.turn_index == 1


def test_a_turn_returns_reply_tool_calls_messages_and_index() -> None:
    model = ScriptedModel([ToolCall(name="add", arguments={"a": 2, "b": 3}), "5", "again"])
    session = AgentSession(Agent(name="calc", model=model, tools=[add]))
    result = session.submit_turn_sync("2 + 3?")
    assert isinstance(result, TurnResult)
    assert (result.turn_index, result.reply, result.status) == (1, "5", "completed")
    assert result.session_id == session.session_id and result.slot_id == "main"
    assert result.tool_calls == [ToolCall(name="add", arguments={"a": 2, "b": 3}, id="call_0001")]
    assert [type(m) for m in result.messages] == [
        UserMessage,
        AssistantMessage,
        ToolMessage,
        AssistantMessage,
    ]
    assert result.messages[2] == result.tool_results[0]
    assert result.tool_results[0].tool_call_id == "call_0001"
    assert session.messages == result.messages
    second = session.submit_turn_sync("and again")
    assert second.turn_index == session.turn_index == 2
    assert second.reply == "again" and second.tool_calls == []
    assert len(session.messages) == 6


def test_the_model_sees_the_system_prompt_and_the_tools() -> None:
    seen: list[Sequence[Message]] = []

    def script(messages: Sequence[Message]) -> str:
        seen.append(list(messages))
        return "ok"

    agent = Agent(name="a", system_prompt="Be brief.", model=ScriptedModel(script), tools=[add])
    session = AgentSession(agent)
    session.submit_turn_sync("one")
    session.submit_turn_sync("two")
    assert [m.role for m in seen[1]] == ["system", "user", "assistant", "user"]
    assert seen[1][0].text == "Be brief." and seen[1][-1].text == "two"
    assert [spec.name for spec in agent.tool_specs] == ["add"]


def test_usage_and_cost_with_a_priced_model() -> None:
    # A dated model name is priced by its listed prefix.
    model = ScriptedModel(
        [ToolCall(name="add", arguments={"a": 1, "b": 1}), "2", "ok"], model_name="priced-v2"
    )
    bundle = RuntimeBundle(prices=PriceTable({"priced": ModelPrice(prompt=3.0, completion=15.0)}))
    session = AgentSession(Agent(name="a", model=model, tools=[add]), bundle=bundle)

    first = session.submit_turn_sync("1 + 1?")
    assert first.usage.requests == 2  # the tool call and the final answer
    expected = (first.usage.prompt_tokens * 3.0 + first.usage.completion_tokens * 15.0) / 1e6
    assert first.cost == pytest.approx(expected) and first.cost > 0
    second = session.submit_turn_sync("thanks")
    assert session.cost_so_far == pytest.approx(first.cost + second.cost)
    assert session.usage == first.usage + second.usage
    record = session.store.get_session(session.session_id)
    assert record is not None and record.cost_usd == pytest.approx(session.cost_so_far)
    assert record.prompt_tokens == session.usage.prompt_tokens


def test_a_failing_tool_goes_back_to_the_model_and_the_turn_goes_on() -> None:
    def divide(a: int, b: int) -> float:
        """Divide."""
        return a / b

    seen: list[Message] = []

    def script(messages: Sequence[Message]) -> Any:
        last = messages[-1]
        if isinstance(last, UserMessage):
            return [
                ToolCall(name="divide", arguments={"a": 1, "b": 0}),
                ToolCall(name="divide", arguments={"a": "x", "b": 1}),
                ToolCall(name="nope", arguments={}),
            ]
        seen.extend(messages)
        return "recovered"

    session = AgentSession(Agent(name="a", model=ScriptedModel(script), tools=[divide]))
    result = session.submit_turn_sync("divide")
    assert result.reply == "recovered" and result.status == "completed"
    errors = [m for m in seen if isinstance(m, ToolMessage)]
    assert [m.is_error for m in errors] == [True, True, True]
    assert "ZeroDivisionError" in errors[0].content
    assert "a:" in errors[1].content
    assert "Available tools: divide" in errors[2].content
    assert result.tool_results == errors


def test_max_tool_rounds_raises_with_the_partial_result_and_keeps_the_messages() -> None:
    calls: list[int] = []

    def ping(n: int) -> int:
        """Ping."""
        calls.append(n)
        return n

    model = ScriptedModel(
        lambda messages: [ToolCall(name="ping", arguments={"n": 1}), ToolCall(name="ping")]
    )
    session = AgentSession(Agent(name="a", model=model, tools=[ping], max_tool_rounds=2))
    with pytest.raises(MaxToolRoundsError) as info:
        session.submit_turn_sync("loop")
    error = info.value
    assert error.context["session_id"] == session.session_id
    assert "max_tool_rounds" in str(error)
    partial = error.partial
    assert isinstance(partial, TurnResult) and partial.status == "max_tool_rounds"
    assert partial.turn_index == session.turn_index == 1
    assert len(partial.tool_calls) == 6  # two calls in each of three answers
    assert calls == [1, 1]  # the second call of each round has a missing argument

    # The messages are kept, in the session and in the store.
    assert session.messages == partial.messages
    reloaded = AgentSession.load(session.session_id, session.agent, store=session.store)
    assert reloaded.messages == partial.messages

    # Every call is answered; the last answer's calls by "not executed" errors.
    answered = {m.tool_call_id: m for m in session.messages if isinstance(m, ToolMessage)}
    assert set(answered) == {call.id for call in partial.tool_calls}
    last = [m for m in session.messages if isinstance(m, AssistantMessage)][-1]
    for call in last.tool_calls:
        assert answered[call.id].is_error
        assert "not executed" in answered[call.id].content
    assert isinstance(session.messages[-1], ToolMessage)


def test_zero_tool_rounds_executes_no_tool() -> None:
    ran: list[int] = []

    def tool() -> int:
        """Tool."""
        ran.append(1)
        return 1

    model = ScriptedModel([ToolCall(name="tool")])
    session = AgentSession(Agent(name="a", model=model, tools=[tool], max_tool_rounds=0))
    with pytest.raises(MaxToolRoundsError):
        session.submit_turn_sync("go")
    assert ran == []


@pytest.mark.parametrize("ok_calls", [0, 1])
def test_a_model_that_raises_leaves_the_session_and_store_unchanged(ok_calls: int) -> None:
    script = ScriptedModel(["first", ToolCall(name="add", arguments={"a": 1, "b": 2}), "never"])
    model = BrokenModel(script, ok=1 + ok_calls)  # the first turn works
    session = AgentSession(Agent(name="a", model=model, tools=[add]))
    session.submit_turn_sync("warm up")
    live, stored = _live(session), _stored(session)

    with pytest.raises(ModelError, match="the model is down"):
        session.submit_turn_sync("this fails")  # ok_calls=1: fails after running a tool
    assert _live(session) == live
    assert _stored(session) == stored
    assert session.messages[-1].text == "first"


def _streaming_session(**agent: Any) -> AgentSession:
    model = ScriptedModel(
        [ToolCall(name="add", arguments={"a": 20, "b": 22}), "the answer is 42", "next"],
        chunk_size=3,
    )
    return AgentSession(Agent(name="s", model=model, tools=[add], **agent))


def test_a_completed_stream_yields_turn_done_last_and_commits() -> None:
    session = _streaming_session()

    async def collect() -> list[Any]:
        return [event async for event in session.submit_turn_stream("6 x 7?")]

    events = asyncio.run(collect())
    kinds = [type(e) for e in events]
    assert kinds[-1] is TurnDone and kinds.count(TurnDone) == 1
    assert kinds.index(ToolCallDelta) < kinds.index(ToolCallStarted)
    assert kinds.index(ToolCallStarted) < kinds.index(ToolResultReady) < kinds.index(TextDelta)
    result = events[-1].result
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == result.reply == "the answer is 42"
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    ready = [e for e in events if isinstance(e, ToolResultReady)]
    assert started[0].call.name == "add" and ready[0].message.content == "42"
    assert session.turn_index == 1 and session.messages == result.messages
    record = session.store.get_session(session.session_id)
    assert record is not None and record.turn_index == 1


@pytest.mark.parametrize("events_before_leaving", [0, 1, 3, 6])
def test_a_stream_abandoned_mid_way_changes_nothing(events_before_leaving: int) -> None:
    session = _streaming_session()
    live, stored = _live(session), _stored(session)

    async def abandon() -> list[Any]:
        stream = session.submit_turn_stream("6 x 7?")
        seen = [await anext(stream) for _ in range(events_before_leaving)]
        await stream.aclose()  # type: ignore[attr-defined]
        return seen

    seen = asyncio.run(abandon())
    assert not any(isinstance(e, TurnDone) for e in seen)
    assert _live(session) == live
    assert _stored(session) == stored
    # The lock was released: the next turn runs and is turn 1.
    assert session.submit_turn_sync("again").turn_index == 1


def test_a_sync_stream_left_with_break_changes_nothing() -> None:
    session = _streaming_session()
    live, stored = _live(session), _stored(session)
    for event in session.submit_turn_stream_sync("6 x 7?"):
        if isinstance(event, ToolResultReady):
            break
    assert _live(session) == live and _stored(session) == stored
    events = list(session.submit_turn_stream_sync("once more"))
    assert isinstance(events[-1], TurnDone) and events[-1].result.turn_index == 1


def test_a_cancelled_turn_changes_nothing() -> None:
    model = ScriptedModel(["slow"], latency=5)
    session = AgentSession(Agent(name="a", model=model))
    live, stored = _live(session), _stored(session)

    async def cancel() -> None:
        task = asyncio.ensure_future(session.submit_turn("hi"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel())
    assert _live(session) == live and _stored(session) == stored


def test_turn_end_hooks_sync_and_async_get_session_and_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[tuple[str, Any, Any]] = []

    def bundle_hook(session: AgentSession, result: TurnResult) -> None:
        # Hooks run after the commit: the store already has the turn.
        record = session.store.get_session(session.session_id)
        calls.append(("bundle", session, (result.turn_index, record and record.turn_index)))

    async def async_hook(session: AgentSession, result: TurnResult) -> None:
        await asyncio.sleep(0)
        calls.append(("async", session, result.reply))

    def raising_hook(session: AgentSession, result: TurnResult) -> None:
        raise RuntimeError("hook bug")

    def late_hook(session: AgentSession, result: TurnResult) -> None:
        calls.append(("late", session, result.turn_index))

    bundle = RuntimeBundle(hooks=[bundle_hook, raising_hook])
    session = AgentSession(Agent(name="a", model=ScriptedModel(["hi!"])), bundle=bundle)
    session.add_turn_end_hook(async_hook)
    session.add_turn_end_hook(late_hook)
    with caplog.at_level(logging.ERROR, logger="agcore_lab"):
        result = session.submit_turn_sync("hello")
    assert result.reply == "hi!"
    assert calls == [
        ("bundle", session, (1, 1)),
        ("async", session, "hi!"),
        ("late", session, 1),
    ]
    failures = [r for r in caplog.records if "hook" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is not None
    assert "hook bug" in str(failures[0].exc_info[1])
    assert session.turn_index == 1


def test_load_restores_everything_after_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    prices = PriceTable({"scripted": ModelPrice(prompt=1.0, completion=1.0)})
    model = ScriptedModel(
        [ToolCall(name="add", arguments={"a": 1, "b": 2}), "3", "side answer", "the summary"]
    )
    agent = Agent(name="calc", model=model, tools=[add])
    session = AgentSession(agent, bundle=RuntimeBundle(store=SqliteStore(path), prices=prices))
    session.submit_turn_sync("1 + 2?")
    session.fork_slot_sync("side", switch=True)
    session.submit_turn_sync("on the side")
    session.set_slot_mode_sync("focused")  # so the summary becomes its override
    session.summarize_sync()
    session.session_memory.set("facts", {"sum": 3, "ok": True}, {"from": "test"})
    session.store.close()

    again = AgentSession.load(
        session.session_id,
        agent,
        bundle=RuntimeBundle(store=SqliteStore(path), prices=prices),
    )
    assert again.session_id == session.session_id
    assert again.turn_index == 2
    assert again.current_slot_id == "side"
    assert set(again.slots) == {"main", "side"}
    for slot_id, slot in session.slots.items():
        loaded = again.slots[slot_id]
        assert loaded.messages == slot.messages
        assert loaded.head_node_id == slot.head_node_id
        assert (loaded.parent_slot_id, loaded.fork_point) == (slot.parent_slot_id, slot.fork_point)
        assert (loaded.mode, loaded.summary_override) == (slot.mode, slot.summary_override)
    assert again.slots["side"].mode is SlotMode.Focused
    assert again.cost_so_far == pytest.approx(session.cost_so_far) and again.cost_so_far > 0
    assert again.usage == session.usage
    assert again.last_summary_turn == 2
    assert again.get_conversation_summary() == "the summary"
    assert again.session_memory.get("facts") == {"sum": 3, "ok": True}
    assert again.session_memory.get_entry("facts").metadata == {"from": "test"}  # type: ignore[union-attr]
    assert again.created_at == session.created_at
    # And it goes on where it stopped.
    assert again.submit_turn_sync("more").turn_index == 3


def test_load_of_an_unknown_session_is_not_found() -> None:
    with pytest.raises(SessionNotFoundError) as info:
        AgentSession.load("ses_nope", Agent(name="a"), store=SqliteStore(":memory:"))
    assert info.value.context["session_id"] == "ses_nope"


def test_store_and_bundle_must_agree() -> None:
    bundle = RuntimeBundle()
    with pytest.raises(ConfigurationError):
        AgentSession(Agent(name="a"), store=SqliteStore(":memory:"), bundle=bundle)
    assert AgentSession(Agent(name="a"), store=bundle.store, bundle=bundle).store is bundle.store


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_rejected_and_changes_nothing(text: str) -> None:
    session = AgentSession(Agent(name="a", model=ScriptedModel(["never used"])))
    live, stored = _live(session), _stored(session)
    with pytest.raises(InvalidInputError, match="non-empty text"):
        session.submit_turn_sync(text)
    with pytest.raises(InvalidInputError):
        list(session.submit_turn_stream_sync(text))
    assert _live(session) == live and _stored(session) == stored
    assert session.agent.model.remaining == 1  # type: ignore[attr-defined]


def test_concurrent_turns_on_one_session_are_serialized() -> None:
    model = ScriptedModel(lambda messages: f"echo {messages[-1].text}", latency=0.01)
    session = AgentSession(Agent(name="a", model=model))

    async def five() -> list[TurnResult]:
        return await asyncio.gather(*(session.submit_turn(f"q{i}") for i in range(5)))

    results = asyncio.run(five())
    assert sorted(r.turn_index for r in results) == [1, 2, 3, 4, 5]
    messages = session.messages
    assert len(messages) == 10
    assert [m.role for m in messages] == ["user", "assistant"] * 5
    for question, answer in zip(messages[::2], messages[1::2], strict=True):
        assert answer.text == f"echo {question.text}"
    for result in results:  # each result's index matches where its messages landed
        position = 2 * (result.turn_index - 1)
        assert messages[position : position + 2] == result.messages
    record = session.store.get_session(session.session_id)
    assert record is not None and record.turn_index == 5


def test_two_sessions_run_concurrently() -> None:
    model = ScriptedModel(lambda messages: "ok", latency=0.2)
    sessions = [AgentSession(Agent(name="a", model=model)) for _ in range(2)]

    async def both() -> list[TurnResult]:
        return await asyncio.gather(*(s.submit_turn("hi") for s in sessions))

    assert [r.turn_index for r in asyncio.run(both())] == [1, 1]
    assert sessions[0].session_id != sessions[1].session_id


def test_a_new_session_is_stored_at_once_with_its_main_slot() -> None:
    session = AgentSession(Agent(name="calc"), session_id="my-session")
    record = session.store.get_session("my-session")
    assert record is not None and record.agent_name == "calc" and record.turn_index == 0
    assert [s.slot_id for s in session.store.load_slots("my-session")] == ["main"]
    assert session.turn_index == 0 and session.cost_so_far == 0.0
    assert "my-session" in repr(session) and "calc" in session._repr_html_()


def _echo_with_latency() -> AgentSession:
    model = ScriptedModel(lambda messages: f"echo {messages[-1].text}", latency=0.05)
    return AgentSession(Agent(name="a", model=model))


def _assert_serialized(session: AgentSession, results: list[TurnResult]) -> None:
    assert sorted(r.turn_index for r in results) == list(range(1, len(results) + 1))
    messages = session.messages
    assert [m.role for m in messages] == ["user", "assistant"] * len(results)
    for question, answer in zip(messages[::2], messages[1::2], strict=True):
        assert answer.text == f"echo {question.text}"


def test_turns_from_a_cell_and_a_widget_callback_take_turns() -> None:
    # In Jupyter a cell awaits on the kernel's loop while a widget callback's turn runs on the
    # bridge loop: one session lock must serialize both, and wake each waiter on its own loop.
    session = _echo_with_latency()

    async def cell() -> list[TurnResult]:
        widget = submit(session.submit_turn("from a widget"))
        await asyncio.sleep(0.01)  # the widget's turn holds the lock now
        mine = await asyncio.wait_for(session.submit_turn("from a cell"), timeout=5)
        return [mine, await asyncio.wrap_future(widget)]

    _assert_serialized(session, asyncio.run(cell()))


def test_a_session_used_on_one_loop_then_on_the_bridge_loop_still_serializes() -> None:
    session = _echo_with_latency()

    async def two() -> list[TurnResult]:
        return list(await asyncio.gather(session.submit_turn("a"), session.submit_turn("b")))

    results = asyncio.run(two())  # the lock was contended on this (now closed) loop
    futures = [submit(session.submit_turn(f"bridge {i}")) for i in range(3)]
    results += [future.result(timeout=20) for future in futures]
    _assert_serialized(session, results)


def test_a_turn_result_is_the_record_a_validation_would_make() -> None:
    # The result is built from the turn's own checked state without a validation pass: it
    # still equals, dumps and counts as the validated record of the same values, and its
    # lists are its own.
    model = ScriptedModel(
        [ToolCall(name="add", arguments={"a": 1, "b": 2}), "three"], model_name="priced"
    )
    bundle = RuntimeBundle(prices=PriceTable({"priced": ModelPrice(prompt=1.0, completion=2.0)}))
    session = AgentSession(Agent(name="a", model=model, tools=[add]), bundle=bundle)
    result = session.submit_turn_sync("add them")
    again = TurnResult.model_validate(result.model_dump())
    assert again == result
    assert again.model_dump_json() == result.model_dump_json()
    assert again.model_fields_set == result.model_fields_set
    assert type(result.cost) is float and result.cost > 0
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    result.messages.clear()
    result.tool_calls.clear()
    assert len(session.submit_turn_sync("again").messages) == 2  # the session is unchanged
    assert [m.role for m in session.messages][:4] == ["user", "assistant", "tool", "assistant"]
