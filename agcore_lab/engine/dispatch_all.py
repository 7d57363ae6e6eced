"""One ``dispatch_all``: many tasks as child sessions under a concurrency limit.

The tasks run in ``max_concurrency`` lanes (tasks of the event loop), each taking the next
waiting task, in input order, as soon as its child is done: a lane goes from one child's end to
the next one's model call in one step of its own. (Tasks that each waited for a semaphore would
be resumed a loop iteration after the release: the children whose models answered together
would all finish first and then all start together, and each wave would wait for the whole
wave's work, so the children moved in lockstep.) Lanes that start together end up one after
another, each its own work behind the one before, and stay so.

Children are made in groups, one store write each (rows, start checkpoints, each child's turn
lease: ``SessionManager.create_children(..., reserve=True)``, so a child's turn starts
without a write of its own), for the next ``max_concurrency`` waiting tasks. The first task
makes its group in its lane; the task that takes the last child made ahead has the next group
made by a task of its own, which runs once that lane awaits its model: in the gap after a wave,
not in front of the lanes that wake behind it. A dispatch cancelled before it started makes no
child; one cancelled later marks every child it made but did not start ``cancelled``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agcore_lab.engine.dispatch_types import (
    DispatchConfig,
    DispatchProgress,
    SubTaskError,
    SubTaskResult,
)

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
        self._results: list[Outcome | None] = [None] * len(tasks)
        self._next = 0  # the next task a free lane takes
        self._makers: set[asyncio.Future[list[AgentSession]]] = set()  # groups made ahead
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
        jobs: list[asyncio.Future[None]] = []
        try:
            try:  # the parent's memory, as it is at dispatch time, for every child
                self._inherited = await self._dispatcher._inherited(self._parent_id, self._config)
            except Exception as exc:  # before any child existed (e.g. an unknown parent)
                return self._none_spawned(exc)
            lanes = min(self._config.max_concurrency, len(self._tasks))
            jobs = [asyncio.ensure_future(self._lane()) for _ in range(lanes)]
            await asyncio.gather(*jobs)
            return [result for result in self._results if result is not None]
        except asyncio.CancelledError:
            running: list[asyncio.Future[Any]] = [*jobs, *self._makers]
            for job in running:
                job.cancel()
            await asyncio.gather(*running, return_exceptions=True)
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

    async def _lane(self) -> None:
        # One of max_concurrency lanes: it runs the next waiting task, then the one after.
        tasks = self._tasks
        while self._next < len(tasks):
            index = self._next
            self._next += 1
            self._results[index] = await self._one(index, tasks[index][1])

    async def _one(self, index: int, task: str) -> Outcome:
        progress = self.progress
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
        if made is None:  # nothing made for it: its group is made now, in its lane
            group = [index, *self._next_waiting(self._config.max_concurrency - 1)]
            return (await self._make(group, self._promise(group[1:])))[0]
        if not self._ahead:  # it took the last child made ahead: the next group is made
            group = self._next_waiting(self._config.max_concurrency)
            if group:
                maker = asyncio.ensure_future(self._make(group, self._promise(group)))
                self._makers.add(maker)
                maker.add_done_callback(self._maker_done)
        return await made

    def _promise(self, group: list[int]) -> list[asyncio.Future[AgentSession]]:
        # A future per task whose child a group makes for it, where its lane will look.
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[AgentSession]] = [loop.create_future() for _ in group]
        self._ahead.update(zip(group, futures, strict=True))
        return futures

    async def _make(
        self, group: list[int], futures: list[asyncio.Future[AgentSession]]
    ) -> list[AgentSession]:
        # One write for the children of ``group``; ``futures`` are those of its last tasks
        # (all of them for a group made ahead, the others for a lane's own).
        try:
            children = await self._dispatcher._create_batch(
                self._parent_id, [self._tasks[i][0] for i in group], self._inherited, self._config
            )
        except BaseException as exc:
            for future in futures:  # their tasks fail as this one did, when admitted
                if not future.done():
                    if isinstance(exc, Exception):
                        future.set_exception(exc)
                    else:
                        future.cancel()
            raise
        for i, child in zip(group, children, strict=True):
            self._made[i] = child
        for future, child in zip(futures, children[len(group) - len(futures) :], strict=True):
            if not future.done():
                future.set_result(child)
        return children

    def _maker_done(self, maker: asyncio.Future[list[AgentSession]]) -> None:
        self._makers.discard(maker)
        if not maker.cancelled():
            maker.exception()  # retrieved: its group's tasks get the error when admitted

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
