"""A non-streamed turn (one coroutine chain) and a streamed one (async generators) behave alike:
the same stored turn, result, checkpoints, model calls, listener events and failures."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    ManagerEvent,
    MaxToolRoundsError,
    Message,
    ModelError,
    ScriptedModel,
    SessionBusyError,
    SessionManager,
    ToolCall,
    TurnDone,
    TurnResult,
)
from agcore_lab.aio import run_sync

MakeManager = Callable[..., SessionManager]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script() -> list[Any]:
    return [ToolCall(name="add", arguments={"a": 2, "b": 3}), "2 + 3 = 5", "again"]


async def _streamed(manager: SessionManager, sid: str, text: str) -> TurnResult:
    result: TurnResult | None = None
    async for event in manager.submit_turn_stream(sid, text):
        if isinstance(event, TurnDone):
            result = event.result
    assert result is not None
    return result


def _outcome(manager: SessionManager, sid: str, result: TurnResult) -> dict[str, Any]:
    session = manager.get_sync(sid)
    checkpoints = manager.checkpointer.list_checkpoints_sync(sid)
    calls = manager.model_calls_sync(sid)
    return {
        "result": (
            result.turn_index,
            result.reply,
            result.status,
            result.tool_calls,
            [(m.role, m.text) for m in result.tool_results],
            [(m.role, m.text) for m in result.messages],
            result.usage,
            result.cost,
            result.pending_tool_call,
        ),
        "history": [(m.role, m.text) for m in session.current_slot.messages],
        "stored": manager.store.get_session(sid).model_dump(  # type: ignore[union-attr]
            include={"turn_index", "spend", "current_slot_id", "version"}
        ),
        "checkpoints": [(c.turn_index, c.source, c.message_count) for c in checkpoints],
        "calls": [
            (c.kind, c.turn_index, len(c.request_messages), c.response and c.response.text)
            for c in calls
        ],
    }


@pytest.mark.parametrize("max_rounds", [5, 0])
def test_a_plain_turn_and_a_streamed_turn_store_the_same(
    make_manager: MakeManager, max_rounds: int
) -> None:
    outcomes = []
    heard = []
    for stream in (False, True):
        manager = make_manager()
        events: list[ManagerEvent] = []
        manager.add_listener(events.append)
        agent = Agent(
            name=f"calc{int(stream)}",
            model=ScriptedModel(_script()),
            tools=[add],
            max_tool_rounds=max_rounds,
        )
        sid = manager.create_sync(agent)

        async def turn(
            sid: str = sid, manager: SessionManager = manager, stream: bool = stream
        ) -> TurnResult:
            if stream:
                return await _streamed(manager, sid, "2 + 3?")
            return await manager.submit_turn(sid, "2 + 3?")

        try:
            result: TurnResult | None = run_sync(turn())
        except MaxToolRoundsError as err:
            result = err.partial
        assert result is not None
        outcomes.append(_outcome(manager, sid, result))
        heard.append([e.kind for e in events])
    assert outcomes[0] == outcomes[1]
    assert heard[0] == heard[1] == ["created", "checkpoint", "turn", "checkpoint"]
    expected = "completed" if max_rounds else "max_tool_rounds"
    assert outcomes[0]["result"][2] == expected


def test_a_failed_or_cancelled_plain_turn_changes_nothing_and_gives_the_lease_up(
    make_manager: MakeManager,
) -> None:
    manager = make_manager()

    def down(_messages: Sequence[Message]) -> str:
        raise ModelError("the model is down")

    broken = ScriptedModel(down)
    slow = ScriptedModel(["slow"], latency=5)
    failing = manager.create_sync(Agent(name="broken", model=broken))
    waiting = manager.create_sync(Agent(name="slow", model=slow))
    before = {sid: manager.store.get_session(sid) for sid in (failing, waiting)}

    async def scenario() -> None:
        with pytest.raises(ModelError, match="the model is down"):
            await manager.submit_turn(failing, "hi")
        task = asyncio.ensure_future(manager.submit_turn(waiting, "hi"))
        await asyncio.sleep(0.05)
        # The lease is held while the model runs: a second writer is refused.
        other = make_manager()
        with pytest.raises(SessionBusyError):
            await other.astore.aacquire_lease(waiting, "someone", ttl=30.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for sid in (failing, waiting):  # given up: another writer takes it at once
            await other.astore.aacquire_lease(sid, "someone", ttl=30.0)
            await other.astore.arelease_lease(sid, "someone")

    run_sync(scenario())
    after = {sid: manager.store.get_session(sid) for sid in (failing, waiting)}
    assert after == before
    for sid in (failing, waiting):
        assert [m.role for m in manager.get_sync(sid).current_slot.messages] == []
