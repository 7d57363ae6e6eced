"""The single bridge from synchronous code to the async engine.

Every ``*_sync`` twin in agcore_lab is one line that calls :func:`run_sync`, and every widget
callback submits its engine call with :func:`submit`. Both run the coroutine on one daemon
background event-loop thread, started on first use.

Why one background loop, even in a plain script: the engine keeps objects that belong to the
loop they were first used on (``httpx.AsyncClient`` connection pools, ``asyncio`` locks and
queues). ``asyncio.run`` per call would give each call a new loop and break them on the second
call; one long-lived loop keeps them valid and keeps HTTP connections alive between turns. It
also works unchanged inside Jupyter, where the kernel's own loop is already running and
``asyncio.run`` raises.

Calling a ``*_sync`` method from the bridge's own thread (from a coroutine or callback already
running on it) would deadlock, so it raises :class:`~agcore_lab.errors.AsyncBridgeError`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Coroutine, Iterator
from typing import Any, TypeVar, cast

from agcore_lab.errors import AsyncBridgeError

__all__ = ["CrossLoopLock", "bridge_loop", "iterate_sync", "run_sync", "submit"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def bridge_loop() -> asyncio.AbstractEventLoop:
    """Return the background event loop, starting its daemon thread on first use."""
    global _loop, _thread
    with _lock:
        if _loop is not None and _thread is not None and _thread.is_alive():
            return _loop
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def _serve() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=_serve, name="agcore-lab-loop", daemon=True)
        thread.start()
        ready.wait()
        _loop, _thread = loop, thread
        return loop


def _in_bridge_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule ``coro`` on the background loop and return at once.

    For widget callbacks, which must not block: attach ``add_done_callback`` to the returned
    future to update the view (setting widget traits from that callback is safe).
    """
    return asyncio.run_coroutine_threadsafe(coro, bridge_loop())


class _Handoff:
    """One ``run_sync`` call: the coroutine, its task on the loop, and a plain lock the
    caller waits on (released when the task is done) — the cheapest wake-up there is."""

    __slots__ = ("coro", "done", "dropped", "task")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.done = threading.Lock()
        self.done.acquire()
        self.dropped = False
        self.task: asyncio.Task[Any] | None = None

    def start(self) -> None:  # on the loop
        if self.dropped:  # the caller gave up before the loop got to it
            self.coro.close()
            return
        self.task = asyncio.get_running_loop().create_task(self.coro)
        self.task.add_done_callback(self._finish)

    def _finish(self, _task: object) -> None:
        self.done.release()

    def drop(self) -> None:  # on the loop
        self.dropped = True
        if self.task is not None:
            self.task.cancel()


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the background loop and wait for its result.

    Works in a plain script, in a thread, and in a Jupyter cell (where a loop is already
    running). Interrupting the wait (Ctrl-C) cancels the coroutine.

    Args:
        coro: The coroutine to run.
        timeout: Seconds to wait before cancelling it and raising ``TimeoutError``.

    Raises:
        AsyncBridgeError: Called from the background loop's own thread.
    """
    if _in_bridge_thread():
        coro.close()
        raise AsyncBridgeError(
            "a *_sync method was called from agcore_lab's event-loop thread; "
            "await the async method instead"
        )
    loop = bridge_loop()
    call = _Handoff(coro)
    loop.call_soon_threadsafe(call.start)
    try:
        if not call.done.acquire(timeout=-1 if timeout is None else max(timeout, 0.0)):
            raise TimeoutError(f"the coroutine did not finish within {timeout} s")
    except BaseException:
        loop.call_soon_threadsafe(call.drop)
        raise
    task = call.task
    assert task is not None
    if task.cancelled():  # as concurrent.futures reports it (an Exception, not a signal)
        raise concurrent.futures.CancelledError()
    return cast(T, task.result())


def iterate_sync(agen: AsyncIterator[T]) -> Iterator[T]:
    """Iterate an async iterator from synchronous code, one item at a time.

    Closing the returned generator early (``break``) closes the async iterator on the loop,
    so the engine sees an abandoned stream exactly as it would in async code.
    """
    if _in_bridge_thread():
        raise AsyncBridgeError(
            "a *_sync stream was iterated on agcore_lab's event-loop thread; "
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
    loop = _loop
    if loop is not None and loop.is_running():
        loop.call_soon_threadsafe(loop.stop)


atexit.register(_shutdown)
