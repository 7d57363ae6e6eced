"""The machinery behind :func:`agcore_lab.aio.run_sync`: the background loop and one call.

A call first runs on the caller's own thread, as far as its first real wait, with the loop
*lent* to it: the loop thread holds :attr:`_Bridge.own` except while it waits for I/O, so a
caller that takes ``own`` knows the loop is idle and will stay so until it lets go. Holding
it, the caller makes the call's task, sets the bridge loop as its thread's running loop (and
that loop's async-generator hooks, and the task as the loop's current task), and takes the
coroutine's first step in a copy of its own context. Then:

- the coroutine finished: that is the result, with no thread hop at all (the common case for
  the SQLite store, whose methods are plain calls on the loop); the task, already made, ends
  at the loop's next turn without running anything;
- it waits on something: the task, which the coroutine saw as its current task, goes on with
  it on the loop, handing the loop the very future the coroutine yielded, as ``yield from``
  would; the caller waits for the outcome as before.

So whatever the coroutine does before its first wait sees what it would on the loop: the
bridge loop from ``get_running_loop()``, its own task from ``current_task()``, the loop's
hooks for async generators, the caller's context variables; locks and futures it makes
belong to the bridge loop; nothing else runs on the loop meanwhile, so a step stays atomic
as it is in asyncio. Only the thread differs, which is what ``asyncio.run`` would give too.
Ctrl-C on the main thread during that step is held back until the step ends (then it
cancels the coroutine at its wait and raises, as it does while the caller waits), so it never
lands in the middle of the engine's synchronous code.

When the loop is busy, in asyncio debug mode (which checks that only the loop thread
schedules callbacks), or without these asyncio internals, a call is posted to the loop and
runs there entirely, as before.
"""

from __future__ import annotations

import asyncio
import collections.abc
import concurrent.futures
import contextvars
import importlib
import os
import selectors
import sys
import threading
import time
from collections import deque
from collections.abc import Coroutine, Generator
from typing import Any, cast

try:  # the C functions behind signal.signal / getsignal (their Python wrappers cost 3-10 us)
    _signal: Any = importlib.import_module("_signal")
except ImportError:  # pragma: no cover - CPython has it everywhere
    _signal = None

_events: Any = asyncio.events
_tasks: Any = asyncio.tasks
_get_running_loop = _events._get_running_loop
_set_running_loop = _events._set_running_loop
_enter_task: Any = getattr(_tasks, "_enter_task", None)
_leave_task: Any = getattr(_tasks, "_leave_task", None)
CAN_STEP_HERE = _enter_task is not None and _leave_task is not None and sys.platform != "win32"
"""Whether a call's first step may run on the caller's thread here (asyncio's task
bookkeeping is reachable, and the loop is a selector loop whose waits we can see)."""

SPIN_SECONDS = 50e-6
"""How long a caller polls for its result (yielding the CPU between polls) before it blocks.
A thread that blocks lets its CPU go idle, and waking an idle CPU is most of a short call's
cost on a virtual machine (tens of microseconds); a call longer than this costs at most this
much CPU more. Nothing polls while no call is waiting."""

_sched_yield = getattr(os, "sched_yield", None)
_perf_counter = time.perf_counter
_SIGINT = 2

# A call's states. FIRST_WAIT: its first step ran on the caller's thread and yielded; the
# task has not taken over yet.
PENDING, FIRST_WAIT, RUNNING, DONE = 0, 1, 2, 3


class _OwnedSelector(selectors.DefaultSelector):
    """The bridge loop's selector: the loop thread lets go of ``own`` only while it waits."""

    def __init__(self, bridge: _Bridge) -> None:
        super().__init__()
        self.bridge = bridge

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        bridge = self.bridge
        own = bridge.own
        own.release()
        try:
            return super().select(timeout)
        finally:
            if not own.acquire(False):  # a caller is taking a step: say so, and wait for it
                bridge.wanted = True
                own.acquire()
                bridge.wanted = False


class _Bridge:
    """The background loop, its thread, and how callers wake it.

    Where ``os.eventfd`` exists (Linux) a caller appends its call to ``queue`` and bumps the
    loop's own eventfd (one ``write``; the loop reads it once and starts every queued call)
    instead of ``call_soon_threadsafe``'s self-pipe socket (a ``send``, then ``recv`` until it
    fails). Elsewhere, or with ``eventfd=False``, calls go through ``call_soon_threadsafe``.
    With ``first_step=False`` (or where :data:`CAN_STEP_HERE` is false) every call is posted.
    """

    __slots__ = (
        "efd",
        "first_step",
        "hooks",
        "loop",
        "own",
        "queue",
        "thread",
        "wanted",
        "woken",
    )

    def __init__(self, *, eventfd: bool = True, first_step: bool = True) -> None:
        self.own = threading.Lock()  # held by the loop thread except while it waits
        self.wanted = False  # the loop thread waits for ``own``: callers post instead
        self.woken = False  # the eventfd was bumped and the loop has not drained it yet
        self.first_step = first_step and CAN_STEP_HERE
        self.loop: asyncio.AbstractEventLoop
        if self.first_step:
            self.loop = asyncio.SelectorEventLoop(_OwnedSelector(self))
        else:
            self.loop = asyncio.new_event_loop()
        self.queue: deque[Handoff] = deque()
        self.efd: int | None = None
        self.hooks: Any = None
        ready = threading.Event()

        def _serve() -> None:
            self.own.acquire()
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(self._listen, eventfd, ready)
            self.loop.run_forever()

        self.thread = threading.Thread(target=_serve, name="agcore-lab-loop", daemon=True)
        self.thread.start()
        ready.wait()

    def _listen(self, eventfd: bool, ready: threading.Event) -> None:  # on the loop
        self.hooks = sys.get_asyncgen_hooks()  # the loop's, set by run_forever
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
        # Only now: a wake between the two would have its write read here and be lost.
        self.woken = False
        queue = self.queue
        while queue:
            queue.popleft().start(self.loop)

    def _woke(self) -> None:  # on the loop, without an eventfd
        self.woken = False

    def wake(self) -> None:
        """Have the loop take a turn soon (from any thread but the loop's); a no-op while an
        earlier wake is still pending, since that turn will see everything scheduled so far."""
        if self.woken:
            return
        self.woken = True
        efd = self.efd
        if efd is None:
            self.loop.call_soon_threadsafe(self._woke)
        else:
            os.eventfd_write(efd, 1)

    def post(self, call: Handoff) -> None:
        """Have the loop start ``call`` (from any thread but the loop's)."""
        if call.done is None:
            call.done = _locked()
        if self.efd is None:
            self.loop.call_soon_threadsafe(call.start, self.loop)
            return
        self.queue.append(call)
        self.wake()

    def may_step_here(self) -> bool:
        """Take the loop for a step on this thread if it is idle (then ``own`` is held)."""
        return (
            self.first_step
            and not self.wanted
            and self.own.acquire(False)
            and (not self.loop.get_debug() or _let_go(self.own))
        )

    def alive(self) -> bool:
        return self.thread.is_alive()


def _let_go(own: threading.Lock) -> bool:
    own.release()
    return False


def _locked() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


class _HeldSigint:
    """A SIGINT handler that only notes the signal (the main thread's step must not be cut
    in two); :meth:`restore` puts the default handler back and says whether one came."""

    __slots__ = ("came",)

    def __init__(self) -> None:
        self.came = False

    def __call__(self, signum: int, frame: object) -> None:
        self.came = True

    def restore(self) -> bool:
        _signal.signal(_SIGINT, _signal.default_int_handler)
        return self.came


def _hold_sigint() -> _HeldSigint | None:
    """On the main thread with Python's default SIGINT handler, hold Ctrl-C back."""
    if (
        _signal is None
        or threading.get_ident() != threading.main_thread().ident
        or _signal.getsignal(_SIGINT) is not _signal.default_int_handler
    ):
        return None
    held = _HeldSigint()
    _signal.signal(_SIGINT, held)
    return held


class Handoff:
    """One ``run_sync`` call: the coroutine, its task, its outcome, and (once the loop may
    finish it) a plain lock the caller waits on, released as the coroutine ends."""

    __slots__ = (
        "cancelled",
        "context",
        "coro",
        "done",
        "dropped",
        "error",
        "result",
        "state",
        "task",
        "yielded",
    )

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.context = contextvars.copy_context()  # the caller's, as call_soon_threadsafe does
        self.done: threading.Lock | None = None
        self.dropped = False
        self.cancelled = False
        self.state = PENDING
        self.result: Any = None
        self.error: BaseException | None = None
        self.yielded: Any = None
        self.task: asyncio.Task[Any] | None = None

    # -- the caller's thread --------------------------------------------------------------

    def step_here(self, bridge: _Bridge, running: asyncio.AbstractEventLoop | None) -> bool:
        """Take the first step on this thread; ``bridge.own`` is held and is let go here.

        Returns whether the coroutine finished. Raises ``KeyboardInterrupt`` if Ctrl-C came
        during the step (the coroutine, if it goes on, is cancelled at its wait).
        """
        loop = bridge.loop
        held = _hold_sigint()
        try:
            hooks = sys.get_asyncgen_hooks()
            _set_running_loop(loop)
            sys.set_asyncgen_hooks(*bridge.hooks)
            try:
                self.task = task = loop.create_task(_Resume(self), context=self.context)
                _enter_task(loop, task)
                try:
                    self.context.run(self._first_step)
                finally:
                    _leave_task(loop, task)
                if self.state != DONE:
                    self.done = _locked()
                elif self.error is None and not self.cancelled and task.cancelling():
                    self.cancelled = True  # it cancelled its own task, then returned
            finally:
                sys.set_asyncgen_hooks(*hooks)
                _set_running_loop(running)
                bridge.own.release()
            bridge.wake()  # the task's turn, and whatever the step scheduled
        finally:
            if held is not None and held.restore():
                raise KeyboardInterrupt  # run_sync cancels the coroutine if it goes on
        return self.state == DONE

    def _first_step(self) -> None:
        try:
            self.yielded = self.coro.send(None)
        except StopIteration as stop:
            self.result = stop.value
            self.state = DONE
        except asyncio.CancelledError:
            self.cancelled = True
            self.state = DONE
        except BaseException as exc:  # the caller raises it
            self.error = exc
            self.state = DONE
        else:
            self.state = FIRST_WAIT

    def wait(self, timeout: float | None) -> bool:
        """Wait for the outcome: poll (yielding) for up to :data:`SPIN_SECONDS`, then block."""
        done = self.done
        assert done is not None
        acquire = done.acquire
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

    # -- the loop's thread ----------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop) -> None:  # a posted call
        if self.dropped:  # the caller gave up before the loop got to it
            self.coro.close()
            return
        self.task = loop.create_task(_Resume(self), context=self.context)

    def drop(self) -> None:
        self.dropped = True
        if self.task is not None:
            self.task.cancel()
        elif self.state == PENDING:  # not started (perhaps never queued: Ctrl-C in post)
            self.coro.close()

    def finish(self) -> None:
        self.state = DONE
        done = self.done
        if done is not None:
            done.release()


class _Resume(collections.abc.Coroutine[Any, Any, None]):
    """What a call's task runs: the call's coroutine, carried on from wherever its first
    step left it, and its outcome recorded for the caller (so the task itself ends quietly,
    or cancelled when the coroutine was)."""

    __slots__ = ("call",)

    def __init__(self, call: Handoff) -> None:
        self.call = call

    def send(self, value: Any) -> Any:
        call = self.call
        state = call.state
        if state == FIRST_WAIT:  # hand the task what the first step yielded
            call.state = RUNNING
            yielded, call.yielded = call.yielded, None
            return yielded
        if state == DONE:  # finished on the caller's thread
            if call.cancelled:
                raise asyncio.CancelledError
            raise StopIteration
        call.state = RUNNING
        return self._advance(call.coro.send, value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        exc = typ if val is None else val
        if isinstance(exc, type):
            exc = exc()
        call = self.call
        state = call.state
        if state == DONE:
            raise exc
        if state == PENDING:  # cancelled before it ever ran
            call.coro.close()
            call.cancelled = isinstance(exc, asyncio.CancelledError)
            call.finish()
            raise exc
        if state == FIRST_WAIT:  # as Task.cancel would have cancelled the future it awaits
            call.state = RUNNING
            yielded, call.yielded = call.yielded, None
            if isinstance(exc, asyncio.CancelledError) and asyncio.isfuture(yielded):
                yielded.cancel()
        return self._advance(call.coro.throw, exc)

    def _advance(self, step: Any, value: Any) -> Any:
        call = self.call
        try:
            return step(value)
        except StopIteration as stop:
            call.result = stop.value
        except asyncio.CancelledError:
            call.cancelled = True
            call.finish()
            raise  # the task ends cancelled, as it would running the coroutine itself
        except GeneratorExit:  # the task itself is being closed
            call.finish()
            raise
        except BaseException as exc:  # the caller raises it; the loop carries on
            call.error = exc
        call.finish()
        raise StopIteration

    def close(self) -> None:
        call = self.call
        if call.state != DONE:
            call.coro.close()
            call.finish()

    def __await__(self) -> Generator[Any, None, None]:
        raise TypeError("a run_sync call is run by its task only")
