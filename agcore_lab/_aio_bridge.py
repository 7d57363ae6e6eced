"""The machinery behind :func:`agcore_lab.aio.run_sync`: the background loop and one call.

A call first runs on the caller's own thread, as far as its first real wait, with the loop
*lent* to it: the loop thread holds :attr:`_Bridge.own` except while it waits for I/O, so a
caller that takes ``own`` knows the loop is idle and will stay so until it lets go. Holding
it, the caller sets the bridge loop as its thread's running loop (and that loop's
async-generator hooks), makes the call's task as usual, takes the task's first step off the
loop's ready queue and runs it itself, as an eager task (Python 3.12's ``eager_start``) would.
Then:

- the coroutine finished: that is the result, with no thread hop, no wake-up of the loop and
  nothing left for it to do (the common case: the SQLite store's methods are plain calls);
- it waits on something: the task has registered its wait exactly as on the loop, and goes on
  there; the caller wakes the loop (its wait was worked out before the step) and waits for
  the outcome as for a posted call. The loop is woken too when a finished step scheduled
  callbacks or timers.

So whatever the coroutine does before its first wait sees what it would on the loop: the
bridge loop from ``get_running_loop()``, its own task from ``current_task()`` (asyncio's own
task step ran it), the loop's hooks for async generators, a copy of the caller's context;
locks and futures it makes belong to the bridge loop; nothing else runs on the loop
meanwhile, so a step stays atomic as it is in asyncio. Only the thread differs, which is what
``asyncio.run`` would give too. Ctrl-C on the main thread during the step is held back until
the step ends (then it cancels the coroutine at its wait and raises, as it does while the
caller waits), so it never lands in the middle of the engine's synchronous code.

When the loop is busy (or waiting to take ``own`` back), in asyncio debug mode (which checks
that only the loop thread schedules callbacks), or on Windows (no selector loop there by
default), a call is posted to the loop and runs there entirely, as before. The step uses
three asyncio internals of the loop we make ourselves: ``_ready``, ``_scheduled`` and
``Handle._run``; the tests of ``tests/unit/test_aio_first_step.py`` pin what they give.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import importlib
import os
import selectors
import sys
import threading
import time
from collections import deque
from collections.abc import Coroutine
from typing import Any, cast

try:  # the C functions behind signal.signal / getsignal (their Python wrappers cost 3-10 us)
    _signal: Any = importlib.import_module("_signal")
except ImportError:  # pragma: no cover - CPython has it everywhere
    _signal = None

_events: Any = asyncio.events
_get_running_loop = _events._get_running_loop
_set_running_loop = _events._set_running_loop
CAN_STEP_HERE = sys.platform != "win32"
"""Whether a call's first step may run on the caller's thread here (the bridge loop is then
a selector loop whose waits we can see)."""

SPIN_SECONDS = 50e-6
"""How long a caller polls for its result (yielding the CPU between polls) before it blocks.
A thread that blocks lets its CPU go idle, and waking an idle CPU is most of a short call's
cost on a virtual machine (tens of microseconds); a call longer than this costs at most this
much CPU more. Nothing polls while no call is waiting."""

_sched_yield = getattr(os, "sched_yield", None)
_perf_counter = time.perf_counter
_SIGINT = 2


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
            # The internals a step uses; a Python whose loop lacks them posts every call.
            internals: Any = self.loop
            self.first_step = (
                isinstance(getattr(internals, "_ready", None), deque)
                and isinstance(getattr(internals, "_scheduled", None), list)
                and hasattr(asyncio.Handle, "_run")
            )
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
        try:
            self.woken = True
            if self.efd is None:
                self.loop.call_soon_threadsafe(self._woke)
            else:
                os.eventfd_write(self.efd, 1)
        except BaseException:  # Ctrl-C before the write: no wake is pending after all
            self.woken = False
            raise

    def post(self, call: Handoff) -> None:
        """Have the loop start ``call`` (from any thread but the loop's)."""
        if self.efd is None:
            self.loop.call_soon_threadsafe(call.start, self.loop)
            return
        self.queue.append(call)
        self.wake()

    def may_step_here(self) -> bool:
        """Take the loop for a step on this thread if it is idle (then ``own`` is held).

        Idle means waiting with nothing to do: no callback queued (say a widget's
        ``submit`` that came just before), no call posted, no timer due. Those would run
        before a posted call, so they run before this one too; the call is posted then.
        """
        if not self.first_step or self.wanted or not self.own.acquire(False):
            return False
        loop: Any = self.loop
        scheduled = loop._scheduled
        if (
            loop._ready
            or self.queue
            or (scheduled and scheduled[0].when() <= loop.time())
            or loop.get_debug()
        ):
            self.own.release()
            return False
        return True

    def alive(self) -> bool:
        return self.thread.is_alive()


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

    # -- the caller's thread --------------------------------------------------------------

    def step_here(self, bridge: _Bridge, running: asyncio.AbstractEventLoop | None) -> bool | None:
        """Run the task's first step on this thread if the loop is idle (``None`` if not).

        The loop is taken (``bridge.own``), the task is made as usual, then its first step
        is taken off the loop's ready queue and run here (what an eager task does), and the
        loop is let go. Returns whether the coroutine finished. Raises ``KeyboardInterrupt``
        if Ctrl-C came meanwhile (run_sync then cancels the coroutine if it goes on); it is
        held back from before the loop is taken, so it never leaves the loop taken.
        """
        held = _hold_sigint()
        try:
            if not bridge.may_step_here():
                return None
            loop: Any = bridge.loop
            ready, scheduled = loop._ready, loop._scheduled
            hooks = sys.get_asyncgen_hooks()
            _set_running_loop(loop)
            sys.set_asyncgen_hooks(*bridge.hooks)
            try:
                queued, timers = len(ready), len(scheduled)
                task: asyncio.Task[None] = loop.create_task(self._drive(), context=self.context)
                self.task = task
                _take_step(ready, task)._run()
                finished = task.done()
                if finished and task.cancelled():  # it cancelled its own task, then returned
                    self.cancelled = True
                # Wake the loop for the task, or for what the step scheduled (the loop's
                # wait was worked out before the step); nothing else needs its turn.
                wake = not finished or len(ready) != queued or len(scheduled) != timers
            finally:
                sys.set_asyncgen_hooks(*hooks)
                _set_running_loop(running)
                bridge.own.release()
            if wake:
                bridge.wake()
        finally:
            if held is not None and held.restore():
                raise KeyboardInterrupt
        return finished

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

    # -- the loop's thread (or a caller holding ``own``) ----------------------------------

    def start(self, loop: asyncio.AbstractEventLoop) -> None:  # a posted call
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

    def drop(self) -> None:
        self.dropped = True
        if self.task is not None:
            self.task.cancel()
        else:  # not started (perhaps never queued: Ctrl-C while posting it)
            self.coro.close()


def _take_step(ready: deque[Any], task: asyncio.Task[None]) -> Any:
    """Take the task's first step (just scheduled by ``create_task``) off the ready queue;
    another thread's ``call_soon_threadsafe`` may have queued something after it."""
    handle = ready[-1]
    if getattr(handle._callback, "__self__", None) is task:
        return ready.pop()
    for handle in reversed(ready):  # pragma: no cover - a thread queued in between
        if getattr(handle._callback, "__self__", None) is task:
            ready.remove(handle)
            return handle
    raise RuntimeError("the bridge loop did not schedule the task's first step")
