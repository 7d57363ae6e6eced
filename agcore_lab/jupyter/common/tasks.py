"""Run engine coroutines from widget callbacks without blocking them.

A widget callback runs on the kernel's main thread while the kernel's event loop is running: it
must return at once (see docs/design.md). :class:`BackgroundTask` submits the coroutine to
agcore_lab's background loop (:func:`agcore_lab.aio.submit`) and calls back when it ends, on that
loop's thread (setting widget traits from there is safe). Whatever happens — success, an
exception, cancellation, or a failing callback — exactly one of ``on_success`` / ``on_error``
runs, and :meth:`BackgroundTask.wait` then returns: errors are never lost in the kernel log.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from agcore_lab.aio import submit

__all__ = ["BackgroundTask"]

T = TypeVar("T")
logger = logging.getLogger("agcore_lab")


class BackgroundTask(Generic[T]):
    """An engine call running on the background loop, with view updates when it ends.

    Args:
        coro: The coroutine to run.
        on_success: Called with the result.
        on_error: Called with the exception (also when ``on_success`` itself raised).

    Example:
        >>> import asyncio
        >>> async def answer() -> int:
        ...     return 42
        >>> seen = []
        >>> task = BackgroundTask(answer(), on_success=seen.append, on_error=print)
        >>> task.wait(5), seen
        (True, [42])
    """

    def __init__(
        self,
        coro: Coroutine[Any, Any, T],
        *,
        on_success: Callable[[T], object],
        on_error: Callable[[BaseException], object],
    ) -> None:
        self._on_success = on_success
        self._on_error = on_error
        self._finished = threading.Event()
        self.future: concurrent.futures.Future[T] = submit(coro)
        self.future.add_done_callback(self._done)

    def _done(self, future: concurrent.futures.Future[T]) -> None:
        try:
            try:
                if future.cancelled():
                    raise concurrent.futures.CancelledError("the operation was cancelled")
                result = future.result()
            except BaseException as exc:
                self._on_error(exc)
                return
            try:
                self._on_success(result)
            except Exception as exc:
                self._on_error(exc)
        except Exception:
            logger.exception("a widget's completion callback failed")
        finally:
            self._finished.set()

    def __repr__(self) -> str:
        state = "done" if self.done else "running"
        if self.done and self.future.cancelled():
            state = "cancelled"
        elif self.done and self.future.exception() is not None:
            state = f"failed: {self.future.exception()!r}"
        return f"<BackgroundTask {state}>"

    @property
    def done(self) -> bool:
        """Whether the call ended and its callback ran."""
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the call ended and the view was updated; ``False`` on timeout."""
        return self._finished.wait(timeout)

    def cancel(self) -> bool:
        """Ask the background loop to cancel the call."""
        return self.future.cancel()
