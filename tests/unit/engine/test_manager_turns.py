"""``SessionManager`` turns: automatic checkpoints, streams, failures, concurrency, events."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    ChatResponse,
    ManagerEvent,
    Message,
    ScriptedModel,
    SessionManager,
    StorageError,
    TextDelta,
    TurnDone,
)
from agcore_lab.llm.base import ToolSpec

MakeManager = Callable[..., SessionManager]
State = Callable[[AgentSession], dict[str, Any]]


def _ckpts(manager: SessionManager, sid: str) -> list[Any]:
    return manager.checkpointer.list_checkpoints_sync(sid)


def test_turns_are_checkpointed_unless_switched_off(
    make_manager: MakeManager, agent: Agent
) -> None:
    manager = make_manager()
    sid = manager.create_sync(agent)
    for n in range(1, 4):
        result = manager.submit_turn_sync(sid, f"turn {n}")
        newest = _ckpts(manager, sid)[0]
        assert (newest.turn_index, newest.source, newest.message_count) == (n, "auto", 2 * n)
        assert result.turn_index == n
    assert len(_ckpts(manager, sid)) == 4
    quiet = make_manager(auto_checkpoint=False)
    other = quiet.create_sync(agent)
    quiet.submit_turn_sync(other, "hello")
    assert _ckpts(quiet, other) == []


def test_a_streamed_turn_is_checkpointed_when_its_stream_finishes(
    manager: SessionManager, state: State
) -> None:
    checkpointer = manager.checkpointer

    async def scenario() -> None:
        sid = await manager.create(Agent(name="writer", model=ScriptedModel(chunk_size=3)))
        session = await manager.get(sid)
        during: list[int] = []
        events: list[Any] = []
        async for event in manager.submit_turn_stream(sid, "stream this reply"):
            events.append(event)
            if isinstance(event, TextDelta):
                during.append(len(await checkpointer.list_checkpoints(sid)))
        assert isinstance(events[-1], TurnDone) and len(during) > 2
        assert set(during) == {1}  # only the "start" checkpoint while streaming
        assert len(await checkpointer.list_checkpoints(sid)) == 2

        before = state(session)
        stream = manager.submit_turn_stream(sid, "abandon this one")
        async for event in stream:
            assert isinstance(event, TextDelta)
            break
        await stream.aclose()
        assert not session.turn_lock.locked()
        assert state(session) == before
        assert len(await checkpointer.list_checkpoints(sid)) == 2
        assert manager.store.get_session(sid).turn_index == 1  # type: ignore[union-attr]
        assert (await manager.submit_turn(sid, "next")).turn_index == 2

    asyncio.run(scenario())


def test_an_abandoned_sync_stream_is_not_checkpointed(
    manager: SessionManager, agent: Agent
) -> None:
    sid = manager.create_sync(agent)
    stream = manager.submit_turn_stream_sync(sid, "a long enough text to stream")
    next(stream)
    stream.close()
    assert len(_ckpts(manager, sid)) == 1 and manager.get_sync(sid).turn_index == 0
    assert list(manager.submit_turn_stream_sync(sid, "whole"))[-1].result.turn_index == 1
    assert len(_ckpts(manager, sid)) == 2


@pytest.mark.parametrize("path", ["with the commit", "after the commit"])
def test_a_failed_automatic_checkpoint_is_logged_and_the_turn_succeeds(
    manager: SessionManager,
    agent: Agent,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    path: str,
) -> None:
    sid = manager.create_sync(agent)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise StorageError("disk full")

    if path == "with the commit":  # the checkpoint cannot be built for the turn's commit
        monkeypatch.setattr(manager.checkpointer, "turn_meta", broken)
        monkeypatch.setattr(manager.store, "memory_version", broken)  # nor on its own
    else:  # another turn-end hook writes after the commit: the checkpoint is its own write
        manager.get_sync(sid).add_turn_end_hook(lambda session, result: None)
        monkeypatch.setattr(manager.store, "put_checkpoint", broken)
    with caplog.at_level(logging.ERROR, logger="agcore_lab"):
        result = manager.submit_turn_sync(sid, "still works")
    assert (result.turn_index, result.reply) == (1, "[scripted] still works")
    assert manager.store.get_session(sid).turn_index == 1  # type: ignore[union-attr]
    assert "disk full" in caplog.text
    with pytest.raises(StorageError, match="disk full"):
        manager.checkpoint_sync(sid, label="explicit")
    with pytest.raises(StorageError):
        manager.checkpointer.checkpoint_sync(manager.get_sync(sid))
    monkeypatch.undo()
    assert len(_ckpts(manager, sid)) == 1  # the "start" one only


class _TimedModel(ScriptedModel):
    """Records when each call started and ended."""

    def __init__(self) -> None:
        super().__init__(latency=0.05)
        self.spans: list[tuple[float, float]] = []

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        start = time.perf_counter()
        response = await super().complete(messages, tools=tools)
        self.spans.append((start, time.perf_counter()))
        return response


def test_many_sessions_run_turns_concurrently(manager: SessionManager) -> None:
    model = _TimedModel()

    async def scenario() -> list[str]:
        ids = [await manager.create(Agent(name="writer", model=model)) for _ in range(10)]
        blocked = await manager.get(ids[0])
        await blocked.turn_lock.acquire()  # one session busy: the others are not held up

        async def three_turns(sid: str) -> None:
            for n in range(3):
                await manager.submit_turn(sid, f"turn {n}")

        await asyncio.wait_for(asyncio.gather(*(three_turns(s) for s in ids[1:])), 10)
        blocked.turn_lock.release()
        await three_turns(ids[0])
        return ids

    ids = asyncio.run(scenario())
    assert len(model.spans) == 30
    peak = max(sum(s <= start < e for s, e in model.spans) for start, _ in model.spans)
    assert peak >= 5, f"at most {peak} model calls overlapped"
    for sid in ids:
        assert manager.get_sync(sid).turn_index == 3 and len(_ckpts(manager, sid)) == 4


def test_listeners_hear_every_change(
    manager: SessionManager, agent: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[ManagerEvent] = []

    def broken(event: ManagerEvent) -> None:
        raise RuntimeError("a broken view")

    manager.add_listener(broken)
    unsubscribe = manager.add_listener(events.append)
    sid = manager.create_sync(agent)
    manager.submit_turn_sync(sid, "hi")
    mine = manager.checkpoint_sync(sid, label="mine")
    marker = manager.checkpointer.rollback_sync(sid, mine)
    child = manager.checkpointer.fork_sync(sid, mine)
    manager.switch_agent_sync(sid, Agent(name="critic"))
    manager.destroy_sync(child)
    assert [(e.kind, e.session_id) for e in events] == [
        ("created", sid),
        ("checkpoint", sid),
        ("turn", sid),
        ("checkpoint", sid),
        ("checkpoint", sid),
        ("rollback", sid),
        ("fork", sid),
        ("agent_switched", sid),
        ("destroyed", child),
    ]
    assert events[4].ckpt_id == mine and events[5].ckpt_id == marker
    assert events[6].new_session_id == child
    assert "a broken view" in caplog.text
    unsubscribe()
    manager.submit_turn_sync(sid, "unheard")
    assert len(events) == 9
