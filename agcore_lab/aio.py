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

A ``run_sync`` call costs two thread wake-ups, and on an idle virtual machine waking a CPU is
most of it. So the caller wakes the loop through an eventfd of the bridge's own (Linux), the
task releases the caller's lock as the coroutine ends, and the caller polls for
:data:`SPIN_SECONDS` before it blocks (its CPU does not go idle, so it need not be woken).
Nothing polls between calls.

Calling a ``*_sync`` method from the bridge's own thread (from a coroutine or callback already
running on it) would deadlock, so it raises :class:`~agcore_lab.errors.AsyncBridgeError`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import os
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Coroutine, Iterator
from typing import Any, TypeVar, cast

from agcore_lab.errors import AsyncBridgeError

__all__ = ["CrossLoopLock", "bridge_loop", "iterate_sync", "run_sync", "submit"]

T = TypeVar("T")

SPIN_SECONDS = 50e-6
"""How long :func:`run_sync` polls for its result (yielding the CPU between polls) before it
blocks. A thread that blocks lets its CPU go idle, and waking an idle CPU is most of a short
call's cost on a virtual machine (tens of microseconds); a call longer than this costs at most
this much CPU more. Nothing polls while no call is waiting."""

_sched_yield = getattr(os, "sched_yield", None)
_perf_counter = time.perf_counter


class _Bridge:
    """The background loop, its thread, and how callers wake it for :func:`run_sync`.

    Where ``os.eventfd`` exists (Linux) a caller appends its call to ``queue`` and bumps the
    loop's own eventfd (one ``write``; the loop reads it once and starts every queued call)
    instead of ``call_soon_threadsafe``'s self-pipe socket (a ``send``, then ``recv`` until it
    fails). Elsewhere, or with ``eventfd=False``, calls go through ``call_soon_threadsafe``.
    """

    __slots__ = ("efd", "loop", "queue", "thread")

    def __init__(self, *, eventfd: bool = True) -> None:
        self.loop = asyncio.new_event_loop()
        self.queue: deque[_Handoff] = deque()
        self.efd: int | None = None
        ready = threading.Event()

        def _serve() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(self._listen, eventfd, ready)
            self.loop.run_forever()

        self.thread = threading.Thread(target=_serve, name="agcore-lab-loop", daemon=True)
        self.thread.start()
        ready.wait()

    def _listen(self, eventfd: bool, ready: threading.Event) -> None:  # on the loop
        try:
            if eventfd and hasattr(os, "eventfd"):
                efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
                try:
                    self.loop.add_reader(efd, self._drain)
                except NotImplementedError:  # a loop without add_reader
                    os.close(efd)
                else:
                    self.efd = efd
        except OSError:  # no eventfd to be had: call_soon_threadsafe then
            pass
        finally:
            ready.set()

    def _drain(self) -> None:  # on the loop: read (reset) first, then start what is queued
        try:
            os.eventfd_read(cast(int, self.efd))
        except BlockingIOError:
            pass
        queue = self.queue
        while queue:
            queue.popleft().start(self.loop)

    def post(self, call: _Handoff) -> None:
        """Have the loop start ``call`` (from any thread but the loop's)."""
        efd = self.efd
        if efd is None:
            self.loop.call_soon_threadsafe(call.start, self.loop)
            return
        self.queue.append(call)
        os.eventfd_write(efd, 1)

    def alive(self) -> bool:
        return self.thread.is_alive()


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


def _in_bridge_thread() -> bool:
    bridge = _bridge
    return bridge is not None and threading.current_thread() is bridge.thread


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule ``coro`` on the background loop and return at once.

    For widget callbacks, which must not block: attach ``add_done_callback`` to the returned
    future to update the view (setting widget traits from that callback is safe).
    """
    return asyncio.run_coroutine_threadsafe(coro, bridge_loop())


class _Handoff:
    """One ``run_sync`` call: the coroutine, its task on the loop, its outcome, and a plain
    lock the caller waits on, released by the task itself as the coroutine ends (no done
    callback, so no extra turn of the loop)."""

    __slots__ = ("cancelled", "context", "coro", "done", "dropped", "error", "result", "task")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.context = contextvars.copy_context()  # the caller's, as call_soon_threadsafe does
        self.done = threading.Lock()
        self.done.acquire()
        self.dropped = False
        self.cancelled = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:  # on the loop
        if self.dropped:  # the caller gave up before the loop got to it
            self.coro.close()
            return
        self.task = loop.create_task(self._drive(), context=self.context)

    async def _drive(self) -> None:
        try:
            self.result = await self.coro
        except asyncio.CancelledError:
            self.cancelled = True
            raise  # the task ends cancelled, as it would running the coroutine itself
        except GeneratorExit:  # the task itself is being closed
            raise
        except BaseException as exc:  # the caller raises it; the loop carries on
            self.error = exc
        finally:
            self.done.release()

    def drop(self) -> None:  # on the loop
        self.dropped = True
        if self.task is not None:
            self.task.cancel()
        else:  # not started (perhaps never queued: Ctrl-C while posting it)
            self.coro.close()

    def wait(self, timeout: float | None) -> bool:
        """Wait for the outcome: poll (yielding) for up to :data:`SPIN_SECONDS`, then block."""
        acquire = self.done.acquire
        if acquire(False):
            return True
        started = _perf_counter()
        if _sched_yield is not None and (timeout is None or timeout > SPIN_SECONDS):
            deadline = started + SPIN_SECONDS
            while _perf_counter() < deadline:
                _sched_yield()
                if acquire(False):
                    return True
        if timeout is None:
            return acquire()
        return acquire(timeout=max(timeout - (_perf_counter() - started), 0.0))

    def outcome(self) -> Any:
        if self.cancelled:  # as concurrent.futures reports it (an Exception, not a signal)
            raise concurrent.futures.CancelledError()
        error = self.error
        if error is not None:
            self.error = None  # no cycle through the caller's frame
            try:
                raise error
            finally:
                del error
        return self.result


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the background loop and wait for its result.

    Works in a plain script, in a thread, and in a Jupyter cell (where a loop is already
    running). Interrupting the wait (Ctrl-C) cancels the coroutine. The coroutine runs in a
    task of its own on the background loop, in a copy of the caller's context: it sees the
    caller's context variables, and what it sets stays with it.

    Args:
        coro: The coroutine to run.
        timeout: Seconds to wait before cancelling it and raising ``TimeoutError``.

    Raises:
        AsyncBridgeError: Called from the background loop's own thread.

    Example:
        >>> async def double(x):
        ...     return 2 * x
        >>> run_sync(double(21))
        42
    """
    if _in_bridge_thread():
        coro.close()
        raise AsyncBridgeError(
            "a *_sync method was called from agcore_lab's event-loop thread; "
            "await the async method instead"
        )
    bridge = _current_bridge()
    call = _Handoff(coro)
    try:
        bridge.post(call)  # inside: Ctrl-C may land just after the loop started the call
        if not call.wait(timeout):
            raise TimeoutError(f"the coroutine did not finish within {timeout} s")
    except BaseException:
        bridge.loop.call_soon_threadsafe(call.drop)
        raise
    return cast(T, call.outcome())


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
    bridge = _bridge
    if bridge is not None and bridge.loop.is_running():
        bridge.loop.call_soon_threadsafe(bridge.loop.stop)


atexit.register(_shutdown)
