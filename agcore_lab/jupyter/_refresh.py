"""Reload a view's data in the background, at most one load at a time.

Manager events arrive in bursts (a turn is followed by its checkpoint), on whatever thread made
the change. A view asks :class:`Reloader` to reload; a request made while a load runs is folded
into one more load after it, so the view always ends on fresh data without a pile of loads.
Loads run on agcore_lab's background loop through :class:`~._tasks.BackgroundTask`; results and
errors reach the view on that loop's thread (setting widget traits there is safe).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from agcore_lab.jupyter._tasks import BackgroundTask

__all__ = ["Reloader"]

T = TypeVar("T")


class Reloader(Generic[T]):
    """Runs ``load()`` on the background loop and hands the result to ``on_loaded``.

    Args:
        load: Makes the coroutine that reads the data (called once per load).
        on_loaded: Gets the data (on the background loop's thread).
        on_error: Gets the exception when a load fails.

    Example:
        >>> async def read() -> int:
        ...     return 7
        >>> seen = []
        >>> reloader = Reloader(read, on_loaded=seen.append, on_error=print)
        >>> _ = reloader.request()
        >>> reloader.wait(5), seen
        (True, [7])
    """

    def __init__(
        self,
        load: Callable[[], Coroutine[Any, Any, T]],
        *,
        on_loaded: Callable[[T], object],
        on_error: Callable[[BaseException], object],
    ) -> None:
        self._load = load
        self._on_loaded = on_loaded
        self._on_error = on_error
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._running = False
        self._again = False
        self._stopped = False
        self.task: BackgroundTask[T] | None = None

    def request(self) -> BackgroundTask[T] | None:
        """Start a load, or ask for one more after the running one; never blocks.

        Returns:
            The task started now, or ``None`` when a load is running (one more follows it) or
            the reloader was stopped.
        """
        with self._lock:
            if self._stopped:
                return None
            if self._running:
                self._again = True
                return None
            self._running = True
            self._idle.clear()
        return self._start()

    def _start(self) -> BackgroundTask[T]:
        self.task = BackgroundTask(self._load(), on_success=self._loaded, on_error=self._failed)
        return self.task

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
            again = self._again and not self._stopped
            self._again = False
            if not again:
                self._running = False
                self._idle.set()
                return
        self._start()

    @property
    def busy(self) -> bool:
        """Whether a load is running or waiting to run."""
        return not self._idle.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no load runs or waits; ``False`` on timeout."""
        return self._idle.wait(timeout)

    def stop(self) -> None:
        """Ignore results from now on and start no more loads."""
        with self._lock:
            self._stopped = True
            self._again = False
