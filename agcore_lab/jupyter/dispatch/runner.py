"""The dispatch a :class:`~agcore_lab.jupyter.DispatchMonitor` runs: start, progress, cancel,
wait and results.

A mixin of the monitor. The dispatch is ``manager.dispatch_all(...)`` on agcore_lab's
background loop (:class:`~agcore_lab.jupyter.common.tasks.BackgroundTask`), its
``on_progress`` reports only schedule a redraw, and **Cancel** cancels that future: the running
children stop cleanly, the unfinished tasks become ``cancelled``, the finished ones keep their
results and checkpoints.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from agcore_lab.aio import bridge_loop

if TYPE_CHECKING:
    from agcore_lab.engine.dispatch import DispatchProgress, SubTaskError, SubTaskResult
    from agcore_lab.jupyter.common.tasks import BackgroundTask

__all__ = ["DispatchRun", "Outcome"]

logger = logging.getLogger("agcore_lab")
Outcome = Literal["running", "completed", "cancelled", "failed"]


class DispatchRun:
    """Runs the monitor's dispatch (the monitor owns the widgets and the state)."""

    manager: Any
    parent_id: str
    tasks: list[Any]
    config: Any
    progress: DispatchProgress
    outcome: Outcome
    error: BaseException | None
    elapsed: float | None
    tree_browser: Any
    dispatch_task: BackgroundTask[list[SubTaskResult | SubTaskError]]
    _results: list[SubTaskResult | SubTaskError] | None
    _live: DispatchProgress | None
    _user_progress: Callable[[DispatchProgress], None] | None
    _began: bool
    _cancelling: bool
    _settled: threading.Event
    _t0: float
    _lock: Any
    _loaders: list[Any]
    refresh: Any
    show_error: Any
    _render: Any

    # -- the dispatch -------------------------------------------------------------------------

    async def _run(self) -> list[SubTaskResult | SubTaskError]:
        self._began = True
        try:
            results = await self.manager.dispatch_all(
                self.parent_id, self.tasks, self.config, on_progress=self._progressed
            )
            self.outcome = "completed"
            return results
        except asyncio.CancelledError:
            self.outcome = "cancelled"
            raise
        except BaseException:
            self.outcome = "failed"
            raise
        finally:
            self.elapsed = time.monotonic() - self._t0
            self.refresh()
            if self.tree_browser is not None:
                self.tree_browser.refresh()  # the children's final state
            self._settled.set()

    def _progressed(self, progress: DispatchProgress) -> None:
        # On the background loop, inside dispatch_all: schedule a redraw, never block.
        self._live = progress
        self.refresh()
        if self._user_progress is not None:
            try:
                self._user_progress(progress)
            except Exception:  # a watcher's bug must not break the dispatch
                logger.exception("on_progress callback failed")

    def _succeeded(self, results: list[SubTaskResult | SubTaskError]) -> None:
        self._results = results
        self._render()
        if self.tree_browser is not None:
            self.tree_browser.refresh()  # the children's final statuses

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, concurrent.futures.CancelledError | asyncio.CancelledError):
            # Cancelled before the coroutine ever ran? Decide on the loop, behind anything the
            # cancellation queued there (two hops: after the task's first step, if any).
            loop = bridge_loop()
            loop.call_soon_threadsafe(loop.call_soon, self._settle_unstarted)
            return
        self.error = exc
        self.show_error(exc)
        self._render()

    def _settle_unstarted(self) -> None:
        if self._began:
            return  # _run's own cleanup reports the end
        with self._lock:
            self.outcome = "cancelled"
            self.elapsed = time.monotonic() - self._t0
            self.progress.statuses = ["cancelled"] * self.progress.total
            self._settled.set()
            self._render()

    def cancel(self) -> bool:
        """Cancel the dispatch: running children stop, unfinished tasks become ``cancelled``.

        Returns ``False`` when the dispatch had already ended.
        """
        if self.outcome != "running" or self._settled.is_set():
            return False
        self._cancelling = True
        self._render()
        return self.dispatch_task.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the dispatch ended and the view (and its tree) caught up; ``False`` on
        timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout

        def left() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        if not self._settled.wait(left()) or not self.dispatch_task.wait(left()):
            return False
        if not all(loader.wait(left()) for loader in self._loaders):
            return False
        browser = self.tree_browser
        rest = left()
        return browser is None or browser.wait(30.0 if rest is None else rest)

    def results(self, timeout: float | None = None) -> list[SubTaskResult | SubTaskError]:
        """Wait for the dispatch; its results in input order (a failed or timed-out task keeps
        its place as a ``SubTaskError``).

        Raises:
            TimeoutError: Still running after ``timeout`` seconds.
            concurrent.futures.CancelledError: The dispatch was cancelled (what finished is in
                :meth:`to_dataframe` and in the store).
        """
        if not self.wait(timeout):
            raise TimeoutError(f"the dispatch is still running after {timeout} s")
        if self.outcome == "cancelled":
            raise concurrent.futures.CancelledError(
                "the dispatch was cancelled; monitor.to_dataframe() shows what finished"
            )
        if self.error is not None:
            raise self.error
        return list(self._results or [])
