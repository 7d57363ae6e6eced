"""ReplayModel: recorded answers for identical requests, a clear error or a live fallback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from agcore_lab import (
    Agent,
    InvalidInputError,
    ReplayMissError,
    ReplayModel,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    ToolCall,
)
from agcore_lab.llm.base import ChatResponse, ModelStreamEvent, TextDelta, ToolSpec
from agcore_lab.llm.messages import Message


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Counting:
    """A 'live' model that counts the requests it gets."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.requests = 0

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        self.requests += 1
        return await self.inner.complete(messages, tools=tools)

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[ModelStreamEvent]:
        self.requests += 1
        return self.inner.stream(messages, tools=tools)


def _record(tmp_path: Path) -> tuple[SessionManager, str, Counting]:
    live = Counting(ScriptedModel([ToolCall(name="add", arguments={"a": 2, "b": 3}), "5"]))
    manager = SessionManager(SqliteStore(tmp_path / "rec.db"))
    sid = manager.create_sync(Agent(name="calc", system_prompt="You add.", model=live, tools=[add]))
    manager.submit_turn_sync(sid, "2 + 3?")
    manager.submit_turn_sync(sid, "and again?")
    return manager, sid, live


def _agent(model: object) -> Agent:
    return Agent(name="calc", system_prompt="You add.", model=model, tools=[add])  # type: ignore[arg-type]


def test_a_recorded_run_replays_identically_from_an_exported_file(tmp_path: Path) -> None:
    manager, sid, live = _record(tmp_path)
    assert manager.export_calls_sync(tmp_path / "calls.jsonl", sid) == 3
    original = manager.get_sync(sid).messages

    replay = ReplayModel(tmp_path / "calls.jsonl")
    other = SessionManager(SqliteStore(tmp_path / "replay.db"))
    again = other.create_sync(_agent(replay))
    first = other.submit_turn_sync(again, "2 + 3?")
    second = other.submit_turn_sync(again, "and again?")
    assert first.reply == "5" and first.tool_calls[0].name == "add"
    assert second.reply == "[scripted] and again?"
    assert [(m.role, m.text) for m in other.get_sync(again).messages] == [
        (m.role, m.text) for m in original
    ]
    assert replay.replayed == 3 and replay.live_calls == 0
    calls = other.model_calls_sync(again)
    recorded = manager.model_calls_sync(sid)
    # Same requests (same hashes), the recorded usage, marked as replayed.
    assert [c.request_hash for c in calls] == [c.request_hash for c in recorded]
    assert [c.usage for c in calls] == [c.usage for c in recorded]
    assert all(c.replayed for c in calls) and not any(c.replayed for c in recorded)


def test_strict_replay_names_the_first_differing_message(tmp_path: Path) -> None:
    manager, sid, _ = _record(tmp_path)
    replay = ReplayModel(manager.model_calls_sync(sid))
    other = SessionManager(SqliteStore(tmp_path / "strict.db"))
    again = other.create_sync(_agent(replay))
    with pytest.raises(ReplayMissError) as caught:
        other.submit_turn_sync(again, "2 + 4?")
    message = str(caught.value)
    assert "message 1 differs" in message
    assert "user '2 + 4?'" in message and "user '2 + 3?'" in message
    assert caught.value.index == 1
    assert other.get_sync(again).messages == []  # nothing of the failed turn was kept


def test_a_fork_reuses_the_recorded_prefix_and_asks_the_live_model_only_for_changes(
    tmp_path: Path,
) -> None:
    manager, sid, live = _record(tmp_path)
    assert live.requests == 3
    fresh = Counting(ScriptedModel(["9"]))
    replay = ReplayModel(manager.model_calls_sync(sid), fallback=fresh)
    # Re-run the notebook with one changed question at the end: 3 recorded calls + 1 new.
    other = SessionManager(SqliteStore(tmp_path / "fork.db"))
    again = other.create_sync(_agent(replay))
    other.submit_turn_sync(again, "2 + 3?")
    other.submit_turn_sync(again, "and again?")
    changed = other.submit_turn_sync(again, "4 + 5?")
    assert changed.reply == "9"
    assert fresh.requests == 1 and replay.live_calls == 1 and replay.replayed == 3
    saved = 3  # the live model was asked once instead of four times
    assert (replay.replayed + replay.live_calls) - fresh.requests == saved
    # A fork of the original session from its first turn re-uses the second turn's answer.
    ckpt = next(c for c in manager.checkpointer.list_checkpoints_sync(sid) if c.turn_index == 1)
    child = manager.checkpointer.fork_sync(sid, ckpt.ckpt_id)
    manager.replace_sync(child, manager.get_sync(child))
    session = manager.get_sync(child)
    session.agent = _agent(replay)
    before = fresh.requests
    assert session.submit_turn_sync("and again?").reply == "[scripted] and again?"
    assert fresh.requests == before  # answered from the recording
    # The new answer was recorded: asking the changed question again costs nothing live.
    third = other.create_sync(_agent(replay))
    for text in ("2 + 3?", "and again?", "4 + 5?"):
        other.submit_turn_sync(third, text)
    assert fresh.requests == before and len(replay.new_calls) == 1


def test_streaming_replays_as_streaming(tmp_path: Path) -> None:
    manager = SessionManager(SqliteStore(tmp_path / "s.db"))
    long = "a recorded answer long enough to come in several pieces"
    sid = manager.create_sync(Agent(name="s", model=ScriptedModel([long])))
    manager.submit_turn_sync(sid, "hi")
    replay = ReplayModel(manager.model_calls_sync(sid))
    again = manager.create_sync(Agent(name="s2", model=replay))
    events = list(manager.submit_turn_stream_sync(again, "hi"))
    pieces = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(pieces) > 2 and "".join(pieces) == long
    (call,) = manager.model_calls_sync(again)
    assert call.streamed and call.replayed and call.ttft_s is not None


def test_bad_recordings_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="export_calls"):
        ReplayModel(tmp_path / "missing.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"not": "a call"}\n')
    with pytest.raises(InvalidInputError, match="line 1"):
        ReplayModel(tmp_path / "bad.jsonl")
    with pytest.raises(InvalidInputError, match="at least one recorded call"):
        ReplayModel([])


def test_identical_requests_get_the_recorded_answers_in_order(tmp_path: Path) -> None:
    manager = SessionManager(SqliteStore(tmp_path / "o.db"))
    shared = ScriptedModel(["first", "second"])
    for _ in range(2):
        manager.submit_turn_sync(manager.create_sync(Agent(name="o", model=shared)), "same")
    calls = manager.model_calls_sync()
    assert calls[0].request_hash == calls[1].request_hash
    replay = ReplayModel(calls)
    replies = [
        manager.submit_turn_sync(manager.create_sync(Agent(name="o", model=replay)), "same").reply
        for _ in range(3)
    ]
    assert replies == ["first", "second", "second"]  # the last recording answers repeats
