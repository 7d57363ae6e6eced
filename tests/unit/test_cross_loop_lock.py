"""CrossLoopLock: one session lock for the kernel's loop and the background loop alike."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agcore_lab.aio import CrossLoopLock, run_sync


def test_serializes_holders_on_two_loops() -> None:
    lock = CrossLoopLock()
    order: list[str] = []
    inside = threading.Event()

    async def hold(name: str, seconds: float) -> None:
        async with lock:
            order.append(f"{name}+")
            inside.set()
            await asyncio.sleep(seconds)
            order.append(f"{name}-")

    async def on_this_loop() -> None:
        # The background loop takes the lock first; this loop must wait for it.
        future = asyncio.wrap_future(
            __import__("agcore_lab.aio", fromlist=["submit"]).submit(hold("bg", 0.2))
        )
        await asyncio.to_thread(inside.wait)
        await hold("fg", 0.0)
        await future

    asyncio.run(on_this_loop())
    assert order == ["bg+", "bg-", "fg+", "fg-"]
    assert not lock.locked()


def test_waiters_are_served_in_order() -> None:
    lock = CrossLoopLock()
    order: list[int] = []

    async def main() -> None:
        await lock.acquire()

        async def waiter(i: int) -> None:
            async with lock:
                order.append(i)

        tasks = [asyncio.create_task(waiter(i)) for i in range(5)]
        await asyncio.sleep(0.01)
        lock.release()
        await asyncio.gather(*tasks)

    asyncio.run(main())
    assert order == [0, 1, 2, 3, 4]


def test_cancelled_waiter_does_not_leave_the_lock_held() -> None:
    lock = CrossLoopLock()

    async def main() -> None:
        await lock.acquire()
        task = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0.01)
        task.cancel()
        lock.release()  # may grant the lock to the cancelled waiter, which must pass it on
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.01)
        assert not lock.locked()
        async with lock:
            assert lock.locked()

    asyncio.run(main())
    assert not lock.locked()


def test_release_of_an_unlocked_lock_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="unlocked"):
        CrossLoopLock().release()


def test_session_turns_from_two_loops_do_not_fail() -> None:
    from agcore_lab import Agent, AgentSession, ScriptedModel

    session = AgentSession(Agent(name="two-loops", model=ScriptedModel(latency=0.05)))

    async def from_user_loop() -> None:
        # One turn on the bridge loop and one on this loop, contending for the session lock.
        background = asyncio.to_thread(session.submit_turn_sync, "from the bridge")
        await asyncio.gather(background, session.submit_turn("from the user loop"))

    asyncio.run(from_user_loop())
    run_sync(session.submit_turn("and again on the bridge"))
    assert session.turn_index == 3
    assert len(session.messages) == 6
