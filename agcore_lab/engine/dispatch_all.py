"""One ``dispatch_all``: many tasks as child sessions under a concurrency limit.

A task's child is created when the task is admitted (under the limit), not before: the tree
shows the children that run or ran, and a dispatch cancelled before a task started leaves no
child for it. The tasks admitted in the same event-loop iteration — the first
``max_concurrency`` at the start, then each wave that follows a wave of finished children —
are created together in one store write (rows, start checkpoints, each child's turn lease:
``SessionManager.create_children(..., reserve=True)``), so a child's turn starts without a
write of its own and the commits of one wave go in one group (see
:mod:`agcore_lab.store._commit_group`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agcore_lab.engine.dispatch_types import (
    DispatchConfig,
    DispatchProgress,
    SubTaskError,
    SubTaskResult,
)
from agcore_lab.store._commit_group import grouped_commits

if TYPE_CHECKING:
    from agcore_lab.agent.agent import Agent
    from agcore_lab.agent.session import AgentSession
    from agcore_lab.engine.dispatch import Dispatcher
    from agcore_lab.store.base import MemoryEntry

__all__ = ["DispatchRun"]

Outcome = SubTaskResult | SubTaskError


class DispatchRun:
    """The state of one ``dispatch_all`` (its progress, its limit, the children it made)."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        parent_id: str,
        tasks: Sequence[tuple[Agent, str]],
        config: DispatchConfig,
        on_progress: Callable[[DispatchProgress], None] | None,
    ) -> None:
        self._dispatcher, self._parent_id, self._tasks = dispatcher, parent_id, tasks
        self._config, self._on_progress = config, on_progress
        self.progress = DispatchProgress(
            total=len(tasks),
            waiting=len(tasks),
            child_ids=[None] * len(tasks),
            statuses=["waiting"] * len(tasks),
        )
        self._gate = asyncio.Semaphore(config.max_concurrency)
        self._inherited: list[MemoryEntry] = []
        self._admitted: list[tuple[int, asyncio.Future[AgentSession]]] = []
        self._creating: set[asyncio.Future[None]] = set()
        self._made: dict[int, AgentSession] = {}  # children created, by task index
        self._started: set[int] = set()  # tasks whose child's turn began

    def _report(self) -> None:
        if self._on_progress is not None:
            self._on_progress(self.progress)

    async def run(self) -> list[Outcome]:
        """Run every task; results in input order (see ``Dispatcher.dispatch_all``)."""
        jobs: list[asyncio.Future[Outcome]] = []
        try:
            try:  # the parent's memory, as it is at dispatch time, for every child
                self._inherited = await self._dispatcher._inherited(self._parent_id, self._config)
            except Exception as exc:  # before any child existed (e.g. an unknown parent)
                return self._none_spawned(exc)
            jobs = [asyncio.ensure_future(self._one(i, t)) for i, (_, t) in enumerate(self._tasks)]
            return list(await asyncio.gather(*jobs))
        except asyncio.CancelledError:
            for job in jobs:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)
            await asyncio.gather(*self._creating, return_exceptions=True)
            for index, child in self._made.items():  # made, but its turn never began
                if index not in self._started:
                    self._dispatcher._mark(child, "cancelled")  # and gives its lease up
            for index, status in enumerate(self.progress.statuses):
                if status in ("waiting", "running"):
                    self.progress.statuses[index] = "cancelled"
            self._report()
            raise

    async def _one(self, index: int, task: str) -> Outcome:
        grouped_commits()  # this task's own context: its child's commit joins its wave's
        progress = self.progress
        async with self._gate:
            progress.waiting -= 1
            progress.running += 1
            progress.peak_running = max(progress.peak_running, progress.running)
            progress.statuses[index] = "running"
            self._report()
            try:
                result: Outcome = await self._child_task(index, task)
                progress.done += 1
                progress.statuses[index] = "completed"
            except SubTaskError as exc:
                result = exc
                progress.failed += 1
                progress.statuses[index] = exc.status
            except Exception as exc:  # outside the child's turn (e.g. its creation)
                child = self._made.get(index)
                result = SubTaskError(
                    f"sub-task failed: {exc!r}",
                    child_id=child.session_id if child is not None else None,
                    task=task,
                    status="failed",
                    error=exc,
                )
                progress.failed += 1
                progress.statuses[index] = "failed"
            finally:
                progress.running -= 1
                self._report()
            return result

    async def _child_task(self, index: int, task: str) -> SubTaskResult:
        child = await self._spawn(index)
        self.progress.child_ids[index] = child.session_id  # watchers see the child while it runs
        self._report()
        self._started.add(index)
        return await self._dispatcher._run(child, self._parent_id, task, self._config)

    async def _spawn(self, index: int) -> AgentSession:
        # Join the tasks admitted in this loop iteration; the first schedules their creation
        # (a task, so it starts in the next iteration, when every one of them has joined).
        future: asyncio.Future[AgentSession] = asyncio.get_running_loop().create_future()
        if not self._admitted:
            creating = asyncio.ensure_future(self._create())
            self._creating.add(creating)
            creating.add_done_callback(self._creating.discard)
        self._admitted.append((index, future))
        return await future

    async def _create(self) -> None:
        batch = [(i, f) for i, f in self._admitted if not f.cancelled()]
        self._admitted = []
        if not batch:
            return
        try:
            children = await self._dispatcher._create_batch(
                self._parent_id,
                [self._tasks[i][0] for i, _ in batch],
                self._inherited,
                self._config,
            )
        except Exception as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        except BaseException:
            for _, future in batch:
                future.cancel()
            raise
        for (index, future), child in zip(batch, children, strict=True):
            self._made[index] = child
            if not future.done():
                future.set_result(child)

    def _none_spawned(self, exc: Exception) -> list[Outcome]:
        # Each task fails as it did when it found no parent by itself.
        results: list[Outcome] = [
            SubTaskError(
                f"sub-task failed: {exc!r}", child_id=None, task=task, status="failed", error=exc
            )
            for _, task in self._tasks
        ]
        self.progress.waiting, self.progress.failed = 0, len(self._tasks)
        self.progress.statuses = ["failed"] * len(self._tasks)
        self._report()
        return results
