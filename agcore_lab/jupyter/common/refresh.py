"""The one refresh path of every view: requests from any thread, coalesced, loaded off the turn.

Manager events arrive in bursts (a turn is followed by its checkpoint), on whatever thread made
the change — a cell, agcore_lab's background loop, or (with cross-kernel change events) a
watcher thread — and for ``turn``/``checkpoint`` while that session's turn lock is held. A view
turns every event into :meth:`Reloader.request`, which only flips a flag and, at most once per
``interval`` (100 ms by default), schedules one load on agcore_lab's background loop: the
listener returns at once, does no store I/O, and a burst of any size costs one reload. A request
that arrives while a load runs is folded into one more load after it (no sooner than
``interval`` after the previous one began), so the view always ends on fresh data. Loads share
the loop with the turns they follow, so a slow load spaces the next ones out: a load that took
``d`` seconds (reading and redrawing) is followed by the next no sooner than ``LOAD_SHARE_GAP
* d`` later — the views never take more than about a fifth of the loop, however big the
history they show.

:class:`Poller` covers subjects that emit no events (a live ``AgentSession``'s slots): it
compares a cheap in-memory fingerprint on the background loop and requests a reload when it
changes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, Generic, TypeVar

from agcore_lab.aio import bridge_loop, submit
from agcore_lab.jupyter.common.tasks import BackgroundTask

__all__ = ["DEFAULT_INTERVAL", "Poller", "Reloader"]

T = TypeVar("T")
DEFAULT_INTERVAL = 0.1
"""Seconds between two loads of one view (the redraw rate's ceiling)."""
LOAD_SHARE_GAP = 5.0
"""The next load starts no sooner than this many times the last load's duration after it."""


class Reloader(Generic[T]):
    """Runs ``load()`` on the background loop and hands the result to ``on_loaded``.

    Args:
        load: Makes the coroutine that reads the data (called once per load).
        on_loaded: Gets the data (on the background loop's thread).
        on_error: Gets the exception when a load fails.
        interval: At most one load starts per ``interval`` seconds; requests in between are
            folded into the next load.

    Example:
        >>> async def read() -> int:
        ...     return 7
        >>> seen = []
        >>> reloader = Reloader(read, on_loaded=seen.append, on_error=print)
        >>> reloader.request()
        True
        >>> reloader.wait(5), seen
        (True, [7])

    Notes:
        :meth:`request` is safe from any thread and never blocks (a lock held for a few
        instructions, and one ``call_soon_threadsafe``).
    """

    def __init__(
        self,
        load: Callable[[], Coroutine[Any, Any, T]],
        *,
        on_loaded: Callable[[T], object],
        on_error: Callable[[BaseException], object],
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        self._load = load
        self._on_loaded = on_loaded
        self._on_error = on_error
        self.interval = max(0.0, interval)
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._scheduled = False  # a load is due (waiting for its slot, or running)
        self._again = False  # one more load after the running one
        self._stopped = False
        self._last_start = float("-inf")
        self._last_duration = 0.0
        self.loads = 0
        self.task: BackgroundTask[T] | None = None

    def request(self) -> bool:
        """Ask for a load; never blocks.

        Returns:
            ``True`` when this call scheduled a load; ``False`` when it was folded into one
            already due (or the reloader was stopped).
        """
        with self._lock:
            if self._stopped:
                return False
            if self._scheduled:
                self._again = True
                return False
            self._scheduled = True
            self._idle.clear()
            delay = self._next_start() - time.monotonic()
        self._schedule(delay)
        return True

    def _next_start(self) -> float:
        # Called with the lock held.
        return self._last_start + max(self.interval, LOAD_SHARE_GAP * self._last_duration)

    def _schedule(self, delay: float) -> None:
        loop = bridge_loop()
        if delay <= 0:
            loop.call_soon_threadsafe(self._begin)
        else:
            loop.call_soon_threadsafe(loop.call_later, delay, self._begin)

    def _begin(self) -> None:
        # On the background loop's thread.
        with self._lock:
            if self._stopped:
                self._settle()
                return
            self._again = False
            self._last_start = time.monotonic()
            self.loads += 1
        try:
            coro = self._load()
        except BaseException as exc:  # making the coroutine failed: report it like a load
            self._failed(exc)
            return
        self.task = BackgroundTask(coro, on_success=self._loaded, on_error=self._failed)

    def _loaded(self, value: T) -> None:
        try:
            if not self._stopped:
                self._on_loaded(value)
        finally:
            self._next()

    def _failed(self, exc: BaseException) -> None:
        try:
            if not self._stopped:
                self._on_error(exc)
        finally:
            self._next()

    def _next(self) -> None:
        with self._lock:
            self._last_duration = time.monotonic() - self._last_start
            if not (self._again and not self._stopped):
                self._settle()
                return
            delay = self._next_start() - time.monotonic()
        self._schedule(delay)

    def _settle(self) -> None:
        # Called with the lock held.
        self._scheduled = False
        self._again = False
        self._idle.set()

    @property
    def busy(self) -> bool:
        """Whether a load is running or due."""
        return not self._idle.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no load runs or is due; ``False`` on timeout."""
        return self._idle.wait(timeout)

    def stop(self) -> None:
        """Ignore results from now on and start no more loads."""
        with self._lock:
            self._stopped = True
            self._again = False
            if self.task is None or self.task.done:
                self._settle()


class Poller:
    """Calls ``on_change()`` when ``fingerprint()`` changes, checked every ``every`` seconds.

    The fingerprint runs on the background loop and must be cheap and in memory (no store
    I/O): e.g. the lengths and last message ids of two slots.

    Example:
        >>> state = {"n": 0}
        >>> changes = []
        >>> poller = Poller(lambda: state["n"], lambda: changes.append(state["n"]), every=0.01)
        >>> state["n"] = 1
        >>> import time; time.sleep(0.2)
        >>> poller.stop(); changes
        [1]
    """

    def __init__(
        self,
        fingerprint: Callable[[], Hashable],
        on_change: Callable[[], object],
        *,
        every: float = 0.25,
    ) -> None:
        self._fingerprint = fingerprint
        self._on_change = on_change
        self.every = every
        self._last = self._safe()
        self._future: concurrent.futures.Future[None] = submit(self._run())

    def _safe(self) -> Hashable:
        try:
            return self._fingerprint()
        except Exception as exc:  # the subject may be gone: that is a change too
            return ("error", type(exc).__name__)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            current = self._safe()
            if current != self._last:
                self._last = current
                try:
                    self._on_change()
                except Exception:  # a redraw problem must not stop the watch
                    import logging

                    logging.getLogger("agcore_lab").exception("a view's change watch failed")

    def stop(self) -> None:
        """Stop watching."""
        self._future.cancel()
