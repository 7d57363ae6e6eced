"""The sync-over-async bridge, and parity between async methods and their ``*_sync`` twins."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic import BaseModel

from agcore_lab import (
    Agent,
    AgentSession,
    InvalidInputError,
    MaxToolRoundsError,
    MergeStrategy,
    ScriptedModel,
    ToolCall,
    aio,
)
from agcore_lab.aio import bridge_loop, iterate_sync, run_sync, submit
from agcore_lab.errors import AsyncBridgeError
from agcore_lab.llm.history import MessageHistory


async def _where() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    await asyncio.sleep(0)
    return asyncio.get_running_loop(), threading.current_thread()


def test_run_sync_runs_on_one_background_loop() -> None:
    loop, thread = run_sync(_where())
    again, same_thread = run_sync(_where())
    assert loop is again is bridge_loop() and thread is same_thread
    assert thread is not threading.current_thread() and thread.daemon


def test_run_sync_from_a_plain_thread() -> None:
    results: list[Any] = []
    threads = [
        threading.Thread(target=lambda n=n: results.append(run_sync(asyncio.sleep(0, n))))
        for n in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [0, 1, 2, 3]


def test_run_sync_inside_a_running_loop_like_a_notebook_cell() -> None:
    # In Jupyter a cell's code runs while the kernel's loop is running; asyncio.run would fail.
    def cell() -> str:
        session = AgentSession(Agent(name="a", model=ScriptedModel(["from a cell"])))
        return session.submit_turn_sync("hi").reply

    async def kernel() -> tuple[str, Any]:
        outer = asyncio.get_running_loop()
        return cell(), outer

    reply, outer = asyncio.run(kernel())
    assert reply == "from a cell"
    assert outer is not bridge_loop()


def test_run_sync_on_the_bridge_thread_is_an_error_not_a_deadlock() -> None:
    async def inner() -> int:
        return 1

    async def misuse() -> int:
        return run_sync(inner())

    with pytest.raises(AsyncBridgeError, match="await the async method"):
        run_sync(misuse(), timeout=10)

    async def misuse_stream() -> None:
        for _ in iterate_sync(_count(3)):
            pass

    with pytest.raises(AsyncBridgeError, match="async for"):
        run_sync(misuse_stream(), timeout=10)


def test_a_sync_twin_awaited_from_a_bridge_callback_raises() -> None:
    session = AgentSession(Agent(name="a"))

    async def callback() -> Any:
        return session.submit_turn_sync("hi")

    with pytest.raises(AsyncBridgeError):
        submit(callback()).result(timeout=10)
    assert session.turn_index == 0


def test_exceptions_propagate_unchanged() -> None:
    boom = ValueError("boom")

    async def fail() -> None:
        await asyncio.sleep(0)
        raise boom

    with pytest.raises(ValueError) as info:
        run_sync(fail())
    assert info.value is boom


def test_run_sync_timeout_cancels_the_coroutine() -> None:
    cancelled = threading.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        run_sync(slow(), timeout=0.05)
    assert cancelled.wait(5)


def test_ctrl_c_while_waiting_cancels_the_coroutine() -> None:
    # A KeyboardInterrupt in a cell arrives as SIGINT in the main thread while run_sync waits.
    assert threading.current_thread() is threading.main_thread()
    started, cancelled = threading.Event(), threading.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def interrupt() -> None:
        if started.wait(5):
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_sync(slow(), timeout=10)
    assert cancelled.wait(5)
    assert run_sync(asyncio.sleep(0, "the bridge still works")) == "the bridge still works"


def test_a_coroutine_cancelled_on_the_loop_raises_cancelled_error() -> None:
    async def cancelled_by_the_engine() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(0)

    with pytest.raises(concurrent.futures.CancelledError):
        run_sync(cancelled_by_the_engine())


def test_a_keyboard_interrupt_raised_by_the_coroutine_reaches_the_caller() -> None:
    async def interrupted() -> None:
        await asyncio.sleep(0)
        raise KeyboardInterrupt

    loop = bridge_loop()
    with pytest.raises(KeyboardInterrupt):
        run_sync(interrupted())
    assert bridge_loop() is loop and run_sync(asyncio.sleep(0, 7)) == 7  # the loop carried on


_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="unset")


def test_each_call_runs_in_a_copy_of_the_callers_context() -> None:
    async def set_and_read(value: str) -> tuple[str, str]:
        before = _VAR.get()
        _VAR.set(value)
        await asyncio.sleep(0)
        return before, _VAR.get()

    token = _VAR.set("the caller's")
    try:
        assert run_sync(set_and_read("first")) == ("the caller's", "first")
        assert run_sync(set_and_read("second")) == ("the caller's", "second")  # nothing leaked
        assert _VAR.get() == "the caller's"
        seen: list[tuple[str, str]] = []
        other = threading.Thread(target=lambda: seen.append(run_sync(set_and_read("t"))))
        other.start()
        other.join(10)
        assert seen == [("unset", "t")]  # another thread's caller has its own context
    finally:
        _VAR.reset(token)


def test_many_threads_calling_at_once_each_get_their_own_results() -> None:
    async def echo(thread: int, i: int) -> tuple[int, int]:
        if i % 3 == 0:
            await asyncio.sleep(0)
        return thread, i

    results: dict[int, list[tuple[int, int]]] = {}

    def caller(thread: int) -> None:
        results[thread] = [run_sync(echo(thread, i)) for i in range(300)]

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {n: [(n, i) for i in range(300)] for n in range(8)}


@pytest.mark.parametrize("eventfd", [True, False])
def test_both_ways_of_waking_the_loop_run_the_coroutine_there(eventfd: bool) -> None:
    # eventfd where the platform has it; call_soon_threadsafe otherwise.
    bridge = aio._Bridge(eventfd=eventfd)
    try:
        assert (bridge.efd is not None) == (eventfd and hasattr(os, "eventfd"))

        async def where(x: int) -> tuple[int, threading.Thread]:
            await asyncio.sleep(0)
            return 2 * x, threading.current_thread()

        for x in range(50):
            call = aio._Handoff(where(x))
            bridge.post(call)
            assert call.wait(10)
            assert call.outcome() == (2 * x, bridge.thread)
    finally:
        bridge.loop.call_soon_threadsafe(bridge.loop.stop)
        bridge.thread.join(5)
        if bridge.efd is not None:
            bridge.loop.remove_reader(bridge.efd)
            os.close(bridge.efd)
        bridge.loop.close()


def test_a_short_timeout_still_waits_the_time_given() -> None:
    async def slow() -> None:
        await asyncio.sleep(30)

    for timeout in (0.0, 50e-6, 0.02):
        with pytest.raises(TimeoutError):
            run_sync(slow(), timeout=timeout)
    assert run_sync(asyncio.sleep(0.001, "in time"), timeout=10) == "in time"


def test_submit_returns_a_future_at_once() -> None:
    gate = threading.Event()

    async def wait_for_gate() -> str:
        while not gate.is_set():
            await asyncio.sleep(0.01)
        return "done"

    future = submit(wait_for_gate())
    assert not future.done()
    gate.set()
    assert future.result(timeout=5) == "done"


async def _count(n: int, closed: list[str] | None = None) -> AsyncIterator[int]:
    try:
        for i in range(n):
            await asyncio.sleep(0)
            yield i
    finally:
        if closed is not None:
            closed.append("closed")


def test_iterate_sync_yields_every_item() -> None:
    closed: list[str] = []
    assert list(iterate_sync(_count(4, closed))) == [0, 1, 2, 3]
    assert closed == ["closed"]


def test_iterate_sync_early_close_closes_the_async_generator() -> None:
    closed: list[str] = []
    items = iterate_sync(_count(100, closed))
    assert next(items) == 0 and next(items) == 1
    items.close()
    assert closed == ["closed"]

    closed.clear()
    for item in iterate_sync(_count(100, closed)):
        if item == 2:
            break
    assert closed == ["closed"]


def test_iterate_sync_propagates_an_exception_after_the_items_before_it() -> None:
    async def fails_at_two() -> AsyncIterator[int]:
        yield 0
        yield 1
        raise KeyError("two")

    seen: list[int] = []
    with pytest.raises(KeyError, match="two"):
        for item in iterate_sync(fails_at_two()):
            seen.append(item)
    assert seen == [0, 1]


# -- async parity ------------------------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _new_session() -> AgentSession:
    script: list[Any] = [
        ToolCall(name="add", arguments={"a": 2, "b": 3}),
        "2 + 3 = 5",
        "streamed reply, long enough for several chunks",
        "side work",
        "condensed side work",
        "a summary",
        ToolCall(name="add", arguments={"a": 1, "b": 1}),
        ToolCall(name="add", arguments={"a": 2, "b": 2}),
    ]
    agent = Agent(
        name="p", model=ScriptedModel(script, chunk_size=7), tools=[add], max_tool_rounds=1
    )
    return AgentSession(agent, session_id="parity")


def _plain(value: Any) -> Any:
    """A comparable form: pydantic models dumped, per-run message ids and times dropped."""
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, dict):
        return {
            k: _plain(v)
            for k, v in value.items()
            if k not in ("created_at", "updated_at", "run_id")
            and not (k == "id" and str(v).startswith("msg_"))
        }
    if isinstance(value, list | tuple | MessageHistory):
        return [_plain(v) for v in value]
    if isinstance(value, BaseException):
        return (type(value).__name__, str(value), _plain(getattr(value, "partial", None)))
    return value


def _state(session: AgentSession) -> Any:
    return _plain(
        {
            "turn_index": session.turn_index,
            "current": session.current_slot_id,
            "last_summary_turn": session.last_summary_turn,
            "cost": session.cost_tracker,
            "slots": {
                sid: {
                    "messages": list(s.messages),
                    "mode": s.mode.value,
                    "summary": s.summary_override,
                    "parent": s.parent_slot_id,
                    "fork_point": s.fork_point,
                    "merge_base": s.merge_base,
                }
                for sid, s in session.slots.items()
            },
            "memory": session.session_memory.to_dict(),
        }
    )


def _catch(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:
        return exc


async def _drive_async(session: AgentSession) -> list[Any]:
    out: list[Any] = [await session.submit_turn("2 + 3?")]
    out.append(await session.fork_slot("side", switch=True))
    out.append([event async for event in session.submit_turn_stream("stream it")])
    out.append(await session.submit_turn("side question"))
    out.append(await session.merge_slot("side", strategy=MergeStrategy.Summarize))
    out.append(await session.switch_slot("main"))
    out.append(await session.summarize())
    for text in ["", "loop"]:
        try:
            await session.submit_turn(text)
        except (InvalidInputError, MaxToolRoundsError) as exc:
            out.append(exc)
    return out


def _drive_sync(session: AgentSession) -> list[Any]:
    out: list[Any] = [session.submit_turn_sync("2 + 3?")]
    out.append(session.fork_slot_sync("side", switch=True))
    out.append(list(session.submit_turn_stream_sync("stream it")))
    out.append(session.submit_turn_sync("side question"))
    out.append(session.merge_slot_sync("side", strategy=MergeStrategy.Summarize))
    out.append(session.switch_slot_sync("main"))
    out.append(session.summarize_sync())
    for text in ["", "loop"]:
        out.append(_catch(lambda text=text: session.submit_turn_sync(text)))
    return out


def _slots_plain(results: list[Any]) -> list[Any]:
    # ContextSlot is a dataclass: compare its messages and settings.
    return [
        _plain({"messages": r.messages, "mode": r.mode.value, "parent": r.parent_slot_id})
        if hasattr(r, "head_node_id")
        else _plain(r)
        for r in results
    ]


def test_async_and_sync_paths_give_identical_results() -> None:
    async_session, sync_session = _new_session(), _new_session()
    async_results = asyncio.run(_drive_async(async_session))
    sync_results = _drive_sync(sync_session)

    assert _slots_plain(async_results) == _slots_plain(sync_results)
    assert _state(async_session) == _state(sync_session)
    # Sanity: the run went where intended.
    assert async_results[0].reply == "2 + 3 = 5"
    assert async_results[6] == "a summary"
    assert isinstance(async_results[-2], InvalidInputError)
    assert isinstance(async_results[-1], MaxToolRoundsError)
    assert async_session.turn_index == 4
