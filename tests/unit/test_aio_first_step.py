"""``run_sync`` takes a coroutine's first step on the calling thread, with the bridge loop lent
to it: what the coroutine sees before its first wait must be what it would see on the loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import gc
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

from agcore_lab import _aio_bridge, aio
from agcore_lab._aio_bridge import _Bridge
from agcore_lab.aio import bridge_loop, run_sync, submit
from agcore_lab.errors import AsyncBridgeError


def _bridge_thread() -> threading.Thread:
    bridge = aio._current_bridge()
    return bridge.thread


async def _where_am_i() -> threading.Thread:
    return threading.current_thread()


def _steps_here() -> bool:
    """Whether a call that never waits runs on this thread (the loop may be finishing an
    earlier call's task at the first try: then the call is posted to it instead)."""
    me = threading.current_thread()
    return any(run_sync(_where_am_i()) is me for _ in range(100))


def test_a_coroutine_that_never_waits_runs_on_the_calling_thread() -> None:
    assert _steps_here()


async def _sees() -> dict[str, Any]:
    before_loop = asyncio.get_running_loop()
    before_task = asyncio.current_task()
    await asyncio.sleep(0)
    return {
        "loop": before_loop,
        "same loop after": asyncio.get_running_loop() is before_loop,
        "task": before_task,
        "same task after": asyncio.current_task() is before_task,
        "thread after": threading.current_thread(),
    }


def test_before_its_first_wait_a_coroutine_sees_the_bridge_loop_and_its_own_task() -> None:
    seen = run_sync(_sees())
    assert seen["loop"] is bridge_loop() and seen["same loop after"]
    task = seen["task"]
    assert isinstance(task, asyncio.Task) and task.get_loop() is bridge_loop()
    assert seen["same task after"] and task.done()
    assert seen["thread after"] is _bridge_thread()


def test_in_a_running_loop_the_step_sees_the_bridge_and_the_cell_gets_its_loop_back() -> None:
    async def kernel() -> tuple[dict[str, Any], bool, bool]:
        outer, cell_task = asyncio.get_running_loop(), asyncio.current_task()
        seen = run_sync(_sees())  # a cell calling a *_sync twin
        return seen, asyncio.get_running_loop() is outer, asyncio.current_task() is cell_task

    seen, same_loop, same_task = asyncio.run(kernel())
    assert seen["loop"] is bridge_loop() and same_loop and same_task


def test_asyncio_timeout_entered_before_the_first_wait_cancels_that_coroutine() -> None:
    async def guarded(seconds: float) -> str:
        async with asyncio.timeout(0.05):
            await asyncio.sleep(seconds)
        return "in time"

    with pytest.raises(TimeoutError):
        run_sync(guarded(30), timeout=10)
    assert run_sync(guarded(0)) == "in time"


def test_loop_objects_made_in_a_first_step_work_in_later_calls_and_threads() -> None:
    # The queue is made on the calling thread; a getter waits on it from another thread's
    # call, and a third call's first step puts into it (scheduling the getter's wakeup).
    async def make() -> asyncio.Queue[int]:
        return asyncio.Queue()

    queue = run_sync(make())
    got: list[int] = []
    getter = threading.Thread(target=lambda: got.append(run_sync(queue.get(), timeout=10)))
    getter.start()
    deadline = time.monotonic() + 10
    while not queue._getters and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.001)

    async def put() -> None:
        queue.put_nowait(7)

    run_sync(put())
    getter.join(10)
    assert got == [7]


def test_what_a_step_schedules_on_the_loop_runs_there_soon() -> None:
    ran: dict[str, threading.Thread] = {}
    all_ran = threading.Event()

    def note(name: str) -> None:
        ran[name] = threading.current_thread()
        if len(ran) == 3:
            all_ran.set()

    async def background() -> None:
        note("task")

    async def schedule() -> None:  # never waits itself
        loop = asyncio.get_running_loop()
        loop.call_soon(note, "call_soon")
        loop.call_later(0.01, note, "call_later")
        asyncio.get_running_loop().create_task(background())

    run_sync(schedule())
    assert all_ran.wait(5), ran
    assert set(ran.values()) == {_bridge_thread()}


def test_a_future_awaited_in_the_first_step_may_finish_before_the_task_takes_over() -> None:
    async def from_executor() -> int:
        return await asyncio.get_running_loop().run_in_executor(None, lambda: 5)

    assert [run_sync(from_executor()) for _ in range(50)] == [5] * 50


_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="unset")


def test_a_first_step_runs_in_a_copy_of_the_callers_context() -> None:
    async def set_and_spawn(value: str) -> tuple[str, str]:
        before = _VAR.get()
        _VAR.set(value)
        child = asyncio.get_running_loop().create_task(_read_var())
        return before, await child

    token = _VAR.set("the caller's")
    try:
        assert run_sync(set_and_spawn("mine")) == ("the caller's", "mine")
        assert _VAR.get() == "the caller's"  # nothing leaked back
    finally:
        _VAR.reset(token)


async def _read_var() -> str:
    return _VAR.get()


def test_an_async_generator_begun_in_a_first_step_is_finalized_on_the_bridge_loop() -> None:
    closed: list[threading.Thread] = []
    done = threading.Event()

    async def numbers() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            await asyncio.sleep(0)  # a finalizer that waits needs the loop's hooks
            closed.append(threading.current_thread())
            done.set()

    async def first_only() -> int:
        gen = numbers()
        return await gen.__anext__()  # the generator is dropped half-way

    assert run_sync(first_only()) == 1
    gc.collect()
    assert done.wait(5)
    assert closed == [_bridge_thread()]


def test_ctrl_c_during_a_first_step_waits_for_the_step_then_interrupts() -> None:
    assert threading.current_thread() is threading.main_thread()
    started, finished = threading.Event(), threading.Event()

    async def busy_without_waiting() -> str:
        started.set()
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:  # synchronous work, no await
            pass
        finished.set()
        return "done"

    _interrupt_when(started)
    with pytest.raises(KeyboardInterrupt):
        run_sync(busy_without_waiting())
    assert finished.is_set()  # the step was not cut in two
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_during_a_first_step_cancels_the_coroutine_at_its_wait() -> None:
    started, cancelled = threading.Event(), threading.Event()

    async def busy_then_wait() -> None:
        started.set()
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            pass
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    _interrupt_when(started)
    with pytest.raises(KeyboardInterrupt):
        run_sync(busy_then_wait(), timeout=10)
    assert cancelled.wait(5)
    assert run_sync(asyncio.sleep(0, "the bridge still works")) == "the bridge still works"


def _interrupt_when(started: threading.Event) -> None:
    def interrupt() -> None:
        if started.wait(5):
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()


def test_a_sync_twin_called_in_a_first_step_or_after_a_wait_raises() -> None:
    async def inner() -> int:
        return 1

    async def before_waiting() -> int:
        return run_sync(inner())

    async def after_waiting() -> int:
        await asyncio.sleep(0)
        return run_sync(inner())

    for misuse in (before_waiting, after_waiting):
        with pytest.raises(AsyncBridgeError, match="await the async method"):
            run_sync(misuse(), timeout=10)
    assert run_sync(inner()) == 1


def test_a_step_is_atomic_with_respect_to_the_loop() -> None:
    # Read-modify-write with a GIL release in the middle, from first steps on this thread and
    # from coroutines on the loop at the same time: none may be lost.
    counter = [0]

    async def bump() -> None:
        value = counter[0]
        time.sleep(0)
        counter[0] = value + 1

    def from_the_loop() -> None:
        futures = [submit(bump()) for _ in range(300)]
        for future in futures:
            future.result(10)

    other = threading.Thread(target=from_the_loop)
    other.start()
    for _ in range(300):
        run_sync(bump())
    other.join(30)
    assert counter[0] == 600


def test_a_busy_loop_gets_the_call_posted_instead() -> None:
    started = threading.Event()

    async def hold_the_loop() -> None:
        started.set()
        time.sleep(0.2)  # blocks the loop thread

    held = submit(hold_the_loop())
    assert started.wait(5)
    assert run_sync(_where_am_i(), timeout=10) is _bridge_thread()
    held.result(5)


def test_in_asyncio_debug_mode_every_call_runs_on_the_loop() -> None:
    loop = bridge_loop()
    loop.set_debug(True)
    try:
        assert run_sync(_where_am_i()) is _bridge_thread()
    finally:
        loop.set_debug(False)
    assert _steps_here()


def test_a_coroutine_that_cancels_its_own_task_is_cancelled() -> None:
    async def cancel_then_return() -> str:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        return "returned anyway"

    async def cancel_then_wait() -> bool:
        task = asyncio.current_task()
        assert task is not None
        future = asyncio.get_running_loop().create_future()
        task.cancel()
        try:
            await future
        except asyncio.CancelledError:
            return future.cancelled()
        return False

    with pytest.raises(concurrent.futures.CancelledError):
        run_sync(cancel_then_return())
    # As in asyncio itself: the future it waited on is cancelled, the coroutine sees it.
    assert run_sync(cancel_then_wait(), timeout=10) is asyncio.run(cancel_then_wait()) is True


def test_an_exception_in_a_first_step_propagates_with_its_traceback() -> None:
    boom = ValueError("boom")

    async def fail_at_once() -> None:
        raise boom

    with pytest.raises(ValueError) as info:
        run_sync(fail_at_once())
    assert info.value is boom
    assert "fail_at_once" in [entry.name for entry in info.traceback]

    async def interrupted_at_once() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sync(interrupted_at_once())
    assert run_sync(asyncio.sleep(0, 7)) == 7


def test_the_timeout_counts_from_the_call() -> None:
    cancelled = threading.Event()

    async def slow_step_then_wait() -> None:
        time.sleep(0.2)  # longer than the timeout, before any wait
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        run_sync(slow_step_then_wait(), timeout=0.1)
    assert time.monotonic() - started < 5
    assert cancelled.wait(5)

    async def slow_but_never_waits() -> str:
        time.sleep(0.2)
        return "finished"

    # Taken on this thread (the loop is idle once a call has just been), a step cannot be
    # cut short: it finishes, as synchronous code under asyncio.wait_for would.
    assert _steps_here()
    assert run_sync(slow_but_never_waits(), timeout=0.1) == "finished"


@pytest.mark.parametrize("eventfd", [True, False])
def test_first_steps_with_either_way_of_waking_the_loop(
    eventfd: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    bridge = _Bridge(eventfd=eventfd)
    monkeypatch.setattr(aio, "_bridge", bridge)
    try:

        async def two_ways(x: int) -> tuple[int, threading.Thread]:
            if x % 2:
                await asyncio.sleep(0)
            return x, threading.current_thread()

        me = threading.current_thread()
        results = [run_sync(two_ways(x), timeout=10) for x in range(200)]
        assert [x for x, _ in results] == list(range(200))
        assert all(thread is bridge.thread for x, thread in results if x % 2)
        # One that never waits runs here, or on the loop if that is still busy with the last.
        assert {thread for x, thread in results if not x % 2} <= {me, bridge.thread}
        assert any(thread is me for _, thread in results)
    finally:
        _stop(bridge)


def _stop(bridge: _Bridge) -> None:
    bridge.loop.call_soon_threadsafe(bridge.loop.stop)
    bridge.thread.join(5)
    bridge.loop.close()


def _parity(make: Callable[[], Coroutine[Any, Any, Any]]) -> tuple[Any, Any]:
    return asyncio.run(make()), run_sync(make(), timeout=10)


def test_first_steps_behave_as_under_asyncio_run() -> None:
    async def observe() -> tuple[bool, bool, bool, str]:
        task = asyncio.current_task()
        lock = asyncio.Lock()
        async with lock:
            event = asyncio.Event()
            asyncio.get_running_loop().call_soon(event.set)
            await event.wait()
        return (
            task is asyncio.current_task(),
            task is not None and not task.done(),
            lock.locked(),
            type(asyncio.get_running_loop()).__name__.replace("_Unix", ""),
        )

    expected, got = _parity(observe)
    assert got == expected == (True, True, False, "SelectorEventLoop")


def test_ctrl_c_is_held_back_whenever_the_loop_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    # A KeyboardInterrupt while the caller holds the loop would leave it taken for good.
    seen: list[object] = []
    take = _Bridge.may_step_here

    def watched(self: _Bridge) -> bool:
        seen.append(signal.getsignal(signal.SIGINT))
        taken = take(self)
        seen.append(signal.getsignal(signal.SIGINT))
        return taken

    monkeypatch.setattr(_Bridge, "may_step_here", watched)
    assert _steps_here()
    assert seen and signal.default_int_handler not in seen
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_while_waking_the_loop_leaves_no_wake_owed(monkeypatch: pytest.MonkeyPatch) -> None:
    bridge = _Bridge()
    monkeypatch.setattr(aio, "_bridge", bridge)
    real_write = _aio_bridge.os.eventfd_write

    def interrupted_write(fd: int, value: int) -> None:
        monkeypatch.setattr(_aio_bridge.os, "eventfd_write", real_write)
        raise KeyboardInterrupt

    try:
        if bridge.efd is None:
            pytest.skip("no eventfd here")
        monkeypatch.setattr(_aio_bridge.os, "eventfd_write", interrupted_write)
        with pytest.raises(KeyboardInterrupt):
            run_sync(asyncio.sleep(0), timeout=5)
        assert not bridge.woken
        # Later calls still wake the loop, posted or stepped.
        assert [run_sync(asyncio.sleep(0, n), timeout=5) for n in range(20)] == list(range(20))
    finally:
        _stop(bridge)


def test_work_queued_on_the_loop_before_a_call_starts_before_it() -> None:
    # A widget's submit() just before a cell's *_sync call: the call does not overtake it.
    order: list[str] = []

    async def note(name: str) -> None:
        order.append(name)

    for _ in range(200):
        order.clear()
        submitted = submit(note("submitted"))
        run_sync(note("sync"), timeout=10)
        submitted.result(10)
        assert order == ["submitted", "sync"]
