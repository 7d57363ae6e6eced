"""One ``dispatch_all``: many tasks as child sessions under a concurrency limit.

Children are made in groups, one store write each (rows, start checkpoints, each child's turn
lease: ``SessionManager.create_children(..., reserve=True)``, so a child's turn starts
without a write of its own): a task admitted under the limit with no child made for it yet
makes its own and those of the next ``max_concurrency - 1`` waiting tasks, each of which then
takes its child the moment it is admitted. A dispatch cancelled before it started makes no
child; one cancelled later marks every child it made but did not start ``cancelled``.

The group is made by the admitted task itself, before its turn, and each later task starts
its turn as soon as it is admitted: nothing makes the children of one wave wait for each
other, so they keep the pace of their lanes (children that wait for a shared step — as the
commit groups of ``DispatchConfig(group_commits=True)`` do — move in lockstep after it, and
each then waits for the whole wave's work).
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
        self._ahead: dict[int, asyncio.Future[AgentSession]] = {}  # made before admission
        self._cursor = 0  # the tasks before it were admitted or made ahead
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
            for future in self._ahead.values():  # made ahead for tasks that never started
                if not future.done():
                    future.cancel()
                elif not future.cancelled():
                    future.exception()  # retrieved: a failed creation is no news here
            for index, child in self._made.items():  # made, but its turn never began
                if index not in self._started:
                    self._dispatcher._mark(child, "cancelled")  # and gives its lease up
            for index, status in enumerate(self.progress.statuses):
                if status in ("waiting", "running"):
                    self.progress.statuses[index] = "cancelled"
            self._report()
            raise

    async def _one(self, index: int, task: str) -> Outcome:
        if self._config.group_commits:
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
        made = self._ahead.pop(index, None)
        if made is not None:  # made with an earlier task's group
            return await made
        loop = asyncio.get_running_loop()
        ahead = self._next_waiting(self._config.max_concurrency - 1)
        for waiting in ahead:
            self._ahead[waiting] = loop.create_future()
        group = [index, *ahead]
        try:
            children = await self._dispatcher._create_batch(
                self._parent_id, [self._tasks[i][0] for i in group], self._inherited, self._config
            )
        except BaseException as exc:
            for waiting in ahead:  # their tasks fail as this one does when admitted
                future = self._ahead[waiting]
                if isinstance(exc, Exception):
                    future.set_exception(exc)
                else:
                    future.cancel()
            raise
        for i, child in zip(group, children, strict=True):
            self._made[i] = child
            if i != index:
                self._ahead[i].set_result(child)
        return children[0]

    def _next_waiting(self, room: int) -> list[int]:
        # The next tasks still waiting for the limit, in the order they will be admitted.
        found: list[int] = []
        statuses = self.progress.statuses
        while self._cursor < len(statuses) and len(found) < room:
            index = self._cursor
            self._cursor += 1
            if statuses[index] == "waiting" and index not in self._ahead:
                found.append(index)
        return found

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
