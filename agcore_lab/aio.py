"""The single bridge from synchronous code to the async engine.

Every ``*_sync`` twin in agcore_lab is one line that calls :func:`run_sync`, and every widget
callback submits its engine call with :func:`submit`. Both run the coroutine on one daemon
background event loop, whose thread starts on first use.

Why one background loop, even in a plain script: the engine keeps objects that belong to the
loop they were first used on (``httpx.AsyncClient`` connection pools, ``asyncio`` locks and
queues). ``asyncio.run`` per call would give each call a new loop and break them on the second
call; one long-lived loop keeps them valid and keeps HTTP connections alive between turns. It
also works unchanged inside Jupyter, where the kernel's own loop is already running and
``asyncio.run`` raises.

A thread hop costs two wake-ups, and on an idle virtual machine waking a CPU is most of a
short call (tens of microseconds). So :func:`run_sync` takes the coroutine's first step on
the caller's own thread while the loop is idle and lent to it (see
:mod:`agcore_lab._aio_bridge` for what the coroutine then sees: the bridge loop, its own
task, the caller's context): a coroutine that never waits (a store call on SQLite) costs no
hop at all. One that waits goes on in its task on the loop; the caller wakes the loop through
an eventfd of the bridge's own (Linux), the task releases the caller's lock as the coroutine
ends, and the caller polls for :data:`SPIN_SECONDS` before it blocks (its CPU does not go
idle, so it need not be woken). Nothing polls between calls.

Calling a ``*_sync`` method from the bridge loop itself (from a coroutine or callback running
on it, or from a coroutine's first step) would deadlock, so it raises
:class:`~agcore_lab.errors.AsyncBridgeError`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Coroutine, Iterator
from typing import Any, TypeVar, cast

from agcore_lab._aio_bridge import SPIN_SECONDS as SPIN_SECONDS
from agcore_lab._aio_bridge import Handoff as _Handoff
from agcore_lab._aio_bridge import _Bridge, _get_running_loop, _perf_counter
from agcore_lab.errors import AsyncBridgeError

__all__ = ["CrossLoopLock", "bridge_loop", "iterate_sync", "run_sync", "submit"]

T = TypeVar("T")

_lock = threading.Lock()
_bridge: _Bridge | None = None


def _current_bridge() -> _Bridge:
    bridge = _bridge
    if bridge is not None and bridge.alive():
        return bridge
    return _start_bridge()


def _start_bridge() -> _Bridge:
    global _bridge
    with _lock:
        if _bridge is None or not _bridge.alive():
            _bridge = _Bridge()
        return _bridge


def bridge_loop() -> asyncio.AbstractEventLoop:
    """Return the background event loop, starting its daemon thread on first use."""
    return _current_bridge().loop


def _on_bridge_loop() -> bool:
    """Whether this thread runs the bridge loop now: the loop's own thread, or a caller in
    a coroutine's first step."""
    bridge = _bridge
    return bridge is not None and _get_running_loop() is bridge.loop


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule ``coro`` on the background loop and return at once.

    For widget callbacks, which must not block: attach ``add_done_callback`` to the returned
    future to update the view (setting widget traits from that callback is safe).
    """
    return asyncio.run_coroutine_threadsafe(coro, bridge_loop())


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the background loop and wait for its result.

    Works in a plain script, in a thread, and in a Jupyter cell (where a loop is already
    running). Interrupting the wait (Ctrl-C) cancels the coroutine. The coroutine runs in a
    task of its own on the background loop, in a copy of the caller's context: it sees the
    caller's context variables, and what it sets stays with it. Its first step (up to its
    first real wait) runs on the calling thread when the loop is idle, with the loop lent to
    it, so a coroutine that never waits returns with no thread hop.

    Args:
        coro: The coroutine to run.
        timeout: Seconds to wait before cancelling it and raising ``TimeoutError``, counted
            from the call. As in asyncio, only a wait can be cut short: a first step taken on
            the calling thread runs to its end.

    Raises:
        AsyncBridgeError: Called from the background loop (a coroutine or callback on it).

    Example:
        >>> async def double(x):
        ...     return 2 * x
        >>> run_sync(double(21))
        42
    """
    running = _get_running_loop()
    bridge = _bridge
    if bridge is None or not bridge.alive():
        bridge = _current_bridge()
    elif running is bridge.loop:
        coro.close()
        raise AsyncBridgeError(
            "a *_sync method was called from agcore_lab's event loop; "
            "await the async method instead"
        )
    started = _perf_counter() if timeout is not None else 0.0
    call = _Handoff(coro)
    try:
        finished = call.step_here(bridge, running)
        if finished:
            return cast(T, call.outcome())
        if finished is None:  # the loop is busy: it runs the call
            bridge.post(call)  # inside: Ctrl-C may land just after the loop started the call
        left = None if timeout is None else max(timeout - (_perf_counter() - started), 0.0)
        if not call.wait(left):
            raise TimeoutError(f"the coroutine did not finish within {timeout} s")
    except BaseException:
        if call.task is None or not call.task.done():  # cancel it on the loop
            bridge.loop.call_soon_threadsafe(call.drop)
        raise
    return cast(T, call.outcome())


def iterate_sync(agen: AsyncIterator[T]) -> Iterator[T]:
    """Iterate an async iterator from synchronous code, one item at a time.

    Closing the returned generator early (``break``) closes the async iterator on the loop,
    so the engine sees an abandoned stream exactly as it would in async code.
    """
    if _on_bridge_loop():
        raise AsyncBridgeError(
            "a *_sync stream was iterated on agcore_lab's event loop; "
            "use 'async for' on the async method instead"
        )
    sentinel = object()

    async def _next() -> Any:
        try:
            return await agen.__anext__()
        except StopAsyncIteration:
            return sentinel

    finished = False
    try:
        while True:
            item = run_sync(_next())
            if item is sentinel:
                finished = True
                return
            yield item
    finally:
        aclose = getattr(agen, "aclose", None)
        if not finished and aclose is not None:
            run_sync(_await(aclose()))


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


class _Waiter:
    __slots__ = ("future", "granted", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> None:
        self.loop, self.future, self.granted = loop, future, False


class CrossLoopLock:
    """An async mutex that may be awaited from any event loop and any thread.

    ``asyncio.Lock`` belongs to the first loop it waits on and fails on any other; a session
    must take turns whether they come from a notebook cell (the kernel's loop) or a widget and
    a ``*_sync`` twin (the background loop). Waiters are served first come, first served;
    a waiter cancelled while waiting never leaves the lock held.

    Example:
        >>> lock = CrossLoopLock()
        >>> async def work():
        ...     async with lock:
        ...         return lock.locked()
        >>> asyncio.run(work())
        True
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held = False
        self._waiters: deque[_Waiter] = deque()

    def locked(self) -> bool:
        """Whether someone holds the lock."""
        return self._held

    def try_acquire(self) -> bool:
        """Hold the lock if it is free right now; ``False`` (without waiting) otherwise."""
        with self._guard:
            if self._held:
                return False
            self._held = True
            return True

    async def acquire(self) -> None:
        """Wait until the lock is free, then hold it."""
        with self._guard:
            if not self._held:
                self._held = True
                return
            loop = asyncio.get_running_loop()
            waiter = _Waiter(loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter.future
        except BaseException:
            with self._guard:
                granted = waiter.granted
                if not granted:
                    self._waiters.remove(waiter)
            if granted:  # ownership arrived as we were cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        """Hand the lock to the next waiter, or free it."""
        with self._guard:
            if not self._held:
                raise RuntimeError("CrossLoopLock.release() called on an unlocked lock")
            while self._waiters:
                waiter = self._waiters.popleft()
                if waiter.loop.is_closed():
                    continue
                waiter.granted = True
                waiter.loop.call_soon_threadsafe(_grant, waiter.future)
                return
            self._held = False

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc_info: object) -> None:
        self.release()


def _grant(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _shutdown() -> None:
    bridge = _bridge
    if bridge is not None and bridge.loop.is_running():
        bridge.loop.call_soon_threadsafe(bridge.loop.stop)


atexit.register(_shutdown)
