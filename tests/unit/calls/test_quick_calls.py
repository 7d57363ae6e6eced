"""A turn's usual call is noted with no probe (``agcore_lab.llm.turn_calls``): one request over
a Full slot's whole history, answered, not streamed, no retry, no request parameters, no
redactor and no listener. It must read back exactly as its probe would have noted it, and
every other call must still take the probe's path (each test below fails if it did not)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    ModelCall,
    ReplayModel,
    ScriptedModel,
    SqliteStore,
    ToolCall,
)
from agcore_lab.agent import turn
from agcore_lab.llm.base import ChatResponse, ModelStreamEvent, ToolSpec
from agcore_lab.llm.messages import AssistantMessage, Message, UserMessage
from agcore_lab.llm.turn_calls import TurnCalls, quick_note
from agcore_lab.llm.usage import Usage
from agcore_lab.llm.window import MessageWindow
from agcore_lab.store._call_blobs import forget


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script(messages: Sequence[Message]) -> str | ToolCall:
    if messages[-1].role == "user" and "add" in messages[-1].text:
        return ToolCall(name="add", arguments={"a": len(messages), "b": 1})
    return f"answer {len(messages)}"


def _run(path: Path, *, system_prompt: str = "You add.") -> tuple[AgentSession, list[ModelCall]]:
    session = AgentSession(
        Agent(name="q", system_prompt=system_prompt, model=ScriptedModel(_script), tools=[add]),
        store=SqliteStore(path),
    )
    for number in range(5):
        session.submit_turn_sync(f"please add {number}" if number % 2 else f"hi {number}")
    return session, session.store.list_calls(session.session_id)


def _riding(store: object) -> int:
    assert isinstance(store, SqliteStore)
    conn = store.connection
    return int(
        conn.execute("SELECT count(*) FROM chain_nodes WHERE call IS NOT NULL").fetchone()[0]
    )


def _rows(store: object) -> int:
    assert isinstance(store, SqliteStore)
    return int(store.connection.execute("SELECT count(*) FROM call_rows").fetchone()[0])


_MEASURED = {"call_id", "session_id", "started_at", "latency_s", "request_messages", "response"}


def _same_call(quick: ModelCall, probed: ModelCall) -> None:
    assert quick.model_dump(exclude=_MEASURED) == probed.model_dump(exclude=_MEASURED)
    assert [m.model_dump(exclude={"id", "created_at"}) for m in quick.request_messages] == [
        m.model_dump(exclude={"id", "created_at"}) for m in probed.request_messages
    ]
    assert quick.response is not None and probed.response is not None
    assert quick.response.model_dump(exclude={"id", "created_at"}) == probed.response.model_dump(
        exclude={"id", "created_at"}
    )


@pytest.mark.parametrize("system_prompt", ["You add.", ""])
def test_the_usual_call_reads_back_as_its_probe_would_have_noted_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system_prompt: str
) -> None:
    quick, quick_calls = _run(tmp_path / "quick.db", system_prompt=system_prompt)
    # The quick path names each call after its start and its answer's random digits.
    assert all(c.response and c.call_id[-4:] == c.response.id[-4:] for c in quick_calls)
    monkeypatch.setattr(turn, "_FULL", None)  # no request is the usual one: probes note all
    probed, probed_calls = _run(tmp_path / "probed.db", system_prompt=system_prompt)
    assert len(quick_calls) == len(probed_calls) == 7  # five turns, two with a tool step
    for fast, slow in zip(quick_calls, probed_calls, strict=True):
        _same_call(fast, slow)
        assert fast.started_at <= fast.response.created_at  # type: ignore[union-attr]
    # Both kept every call on its answer's row, and in the same order as their turns ran.
    assert _riding(quick.store) == _riding(probed.store) == 7
    assert _rows(quick.store) == _rows(probed.store) == 0
    assert [c.call_id for c in quick_calls] == sorted(c.call_id for c in quick_calls)
    assert quick.store.list_calls(quick.session_id) == quick_calls  # the same ids every read


class _Tuned(ScriptedModel):
    """A model that sends request parameters (as an HTTP model's ``temperature``)."""

    request_params = {"temperature": 0.25}


def test_a_model_with_request_parameters_records_them(tmp_path: Path) -> None:
    session = AgentSession(
        Agent(name="p", model=_Tuned(["hello"])), store=SqliteStore(tmp_path / "p.db")
    )
    session.submit_turn_sync("hi")
    (call,) = session.store.list_calls(session.session_id)
    assert call.params == {"temperature": 0.25}


class _Premade:
    """A model whose answers were made before it was asked: their ids' clocks are older
    than the calls' starts."""

    model_name = "premade"

    def __init__(self, message_id: str | None = None) -> None:
        extra = {"id": message_id} if message_id is not None else {}
        self.answers = [AssistantMessage(content=f"ready {n}", **extra) for n in range(2)]

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        answer = self.answers.pop(0)
        return ChatResponse(
            message=answer, model=self.model_name, usage=Usage(prompt_tokens=3, requests=1)
        )

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[ModelStreamEvent]:
        raise NotImplementedError


def test_an_answer_made_before_its_request_keeps_a_row_of_its_own(tmp_path: Path) -> None:
    model = _Premade()
    session = AgentSession(
        Agent(name="m", model=model, tools=[add]), store=SqliteStore(tmp_path / "m.db")
    )
    session.submit_turn_sync("hi")
    session.submit_turn_sync("again")
    calls = session.store.list_calls(session.session_id)
    # The call column keeps the distance from the call's start to its answer's id: none
    # here (the answer is older), so each call keeps a row, read back the same.
    assert _riding(session.store) == 0 and _rows(session.store) == 2
    assert [c.response.content for c in calls if c.response] == ["ready 0", "ready 1"]
    assert [c.usage.prompt_tokens for c in calls] == [3, 3]
    assert [len(c.request_messages) for c in calls] == [1, 3]
    assert calls[1].request_messages[1].text == "ready 0"
    assert session.store.list_calls(session.session_id) == calls


def test_an_answer_with_an_id_of_its_own_keeps_a_row(tmp_path: Path) -> None:
    session = AgentSession(
        Agent(name="i", model=_Premade("answer-one"), tools=[add]),
        store=SqliteStore(tmp_path / "i.db"),
    )
    session.submit_turn_sync("hi")
    (call,) = session.store.list_calls(session.session_id)
    assert _riding(session.store) == 0 and _rows(session.store) == 1
    assert call.response is not None and call.response.id == "answer-one"
    assert call.call_id.startswith("call_") and len(call.call_id) == 22
    assert session.store.list_calls(session.session_id) == [call]


def test_a_focused_slots_call_is_noted_by_its_probe(tmp_path: Path) -> None:
    session = AgentSession(
        Agent(name="f", system_prompt="Be brief.", model=ScriptedModel(_script)),
        store=SqliteStore(tmp_path / "f.db"),
    )
    for number in range(3):
        session.submit_turn_sync(f"hi {number}")
    session.set_slot_mode_sync("focused", recent_window=2, summary_override="earlier: hi")
    session.submit_turn_sync("hi again")
    call = session.store.list_calls(session.session_id)[-1]
    assert call.window_start == 5 and call.injected == {0: "system_prompt", 1: "summary"}
    assert [m.role for m in call.request_messages] == ["system", "system", "assistant", "user"]


def test_the_sequence_builds_each_note_once_with_a_stable_id() -> None:
    answer = AssistantMessage(content="hello")
    response = ChatResponse(message=answer, model="m", usage=Usage(prompt_tokens=2))
    window = MessageWindow((), [UserMessage(content="hi")], 1)
    calls = TurnCalls(("ses_1", "main", 4, "turn"))
    entry = (window, (), 1, (), "m", "msg_anchor", 1_000_000_000_000, 7_000, response, 0.5)
    calls.entries.append(entry)
    note = calls[0]
    assert calls[0] is note and list(calls) == [note] and calls.entries == [note]
    again = quick_note(calls.header, entry)  # built anew: the same call, the same id
    assert again.call_id == note.call_id and note.call_id[-4:] == answer.id[-4:]
    record = note.to_call()
    assert record.turn_index == 4 and record.kind == "turn" and record.status == "ok"
    assert record._tail == ("msg_anchor", 1) and record._response_stored
    assert record.started_at.timestamp() == 1_000 and record.latency_s == 7e-6
    assert record.cost == 0.5 and record.usage.prompt_tokens == 2 and record.injected == {}


def test_a_call_column_reads_the_same_through_the_view(tmp_path: Path) -> None:
    session, calls = _run(tmp_path / "v.db")
    conn = sqlite3.connect(tmp_path / "v.db")
    try:
        rows = conn.execute(
            "SELECT call_id, turn_index, prompt_tokens, latency_us FROM model_calls "
            "ORDER BY call_id"
        ).fetchall()
    finally:
        conn.close()
    assert rows == [
        (c.call_id, c.turn_index, c.usage.prompt_tokens, round(c.latency_s * 1e6)) for c in calls
    ]


def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def test_each_call_records_the_tools_and_prompt_it_was_sent_as_they_change(
    tmp_path: Path,
) -> None:
    # The store keeps the shape of a session's usual call between its turns (the tools and
    # head messages it names): a call whose tools or system prompt changed must not take it.
    store = SqliteStore(tmp_path / "shapes.db")
    first = Agent(name="q", system_prompt="You add.", model=ScriptedModel(_script), tools=[add])
    session = AgentSession(first, store=store)
    session.submit_turn_sync("hi 0")
    session.submit_turn_sync("hi 1")
    # The same tool list object, changed in place between two turns.
    first.tool_map.update(Agent(name="m", tools=[mul]).tool_map)
    session.submit_turn_sync("hi 2")
    other = AgentSession(
        Agent(name="o", system_prompt="You multiply.", model=ScriptedModel(_script), tools=[mul]),
        store=store,
    )
    for number in range(3, 5):  # two sessions taking turns on one connection
        other.submit_turn_sync(f"hi {number}")
        session.submit_turn_sync(f"hi {number}")
    calls = store.list_calls(session.session_id)
    assert [tuple(t.name for t in c.tools) for c in calls] == [
        ("add",),
        ("add",),
        ("add", "mul"),
        ("add", "mul"),
        ("add", "mul"),
    ]
    assert {c.request_messages[0].text for c in calls} == {"You add."}
    others = store.list_calls(other.session_id)
    assert [tuple(t.name for t in c.tools) for c in others] == [("mul",), ("mul",)]
    assert {c.request_messages[0].text for c in others} == {"You multiply."}
    assert _riding(store) == len(calls) + len(others)  # each rode on its answer's row


def test_a_connection_told_to_forget_a_sessions_blobs_writes_them_with_its_next_call(
    tmp_path: Path,
) -> None:
    # What deleting a session's calls does (``_call_blobs.forget``): the next usual call of
    # the session no longer counts on the blobs, kept shape or not, and writes them again.
    session, _ = _run(tmp_path / "forget.db")
    store = session.store
    assert isinstance(store, SqliteStore)
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    try:
        session.submit_turn_sync("hi 5")
        assert not [s for s in statements if "call_blobs" in s]
        forget(store.connection, session.session_id)
        session.submit_turn_sync("hi 6")
    finally:
        store.connection.set_trace_callback(None)
    assert [s for s in statements if s.startswith("INSERT OR IGNORE INTO call_blobs")]
    last = store.list_calls(session.session_id)[-1]
    assert last.request_messages[0].text == "You add." and [t.name for t in last.tools] == ["add"]


class _TwoRequests(ScriptedModel):
    """Answers as the scripted model does, reporting two requests (a backend's own retry)."""

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] | None = None
    ) -> ChatResponse:
        response = await super().complete(messages, tools=tools)
        usage = response.usage.model_copy(update={"requests": 2})
        return response.model_copy(update={"usage": usage})


def test_usual_calls_whose_figures_the_column_cannot_hold_keep_them_in_their_notes(
    tmp_path: Path,
) -> None:
    # Two requests for one answer, and an answer replayed from a recording: each is the
    # turn's usual call, noted as a tuple, but written from its note (the column's rare
    # fields say what the plain figures cannot).
    session = AgentSession(
        Agent(name="two", system_prompt="You add.", model=_TwoRequests(_script), tools=[add]),
        store=SqliteStore(tmp_path / "two.db"),
    )
    session.submit_turn_sync("hi")
    (call,) = session.store.list_calls(session.session_id)
    assert call.usage.requests == 2 and call.response is not None
    assert call.response.content == "answer 2"

    _, (recorded, *_) = _run(tmp_path / "recorded.db")
    replay = AgentSession(
        Agent(name="again", system_prompt="You add.", model=ReplayModel([recorded]), tools=[add]),
        store=SqliteStore(tmp_path / "replay.db"),
    )
    replay.submit_turn_sync("hi 0")
    (again,) = replay.store.list_calls(replay.session_id)
    assert again.replayed and again.usage == recorded.usage
    assert again.request_hash == recorded.request_hash
