"""Sub-agent dispatch: a parent session hands tasks to sub-agents running as child sessions.

``dispatch`` runs one task; ``dispatch_all`` runs many in parallel under a concurrency limit
(that many lanes: see :mod:`agcore_lab.engine.dispatch_all`), returns results in input order,
and keeps going when one fails (the failure keeps its place as a :class:`SubTaskError`);
``dispatch_stream`` streams one.

Memory flows both ways:

- parent → child: with ``inherit_session_memory`` (the default), the child starts with a
  snapshot of the parent's memory taken at dispatch time, restricted by ``bridge_keys``
  (``None``: nothing, ``[]``: every key, a list: those keys). Bridged keys are also stated in
  the child's system prompt. Later writes by the parent do not leak in.
- child → parent: the structured :class:`SubTaskResult`, and the child's ``result_summary``
  memory entry (written from the response unless the child wrote one itself).

Siblings share data through :class:`SharedMemory`: keys ``shared:{namespace}:{key}`` kept in
the parent session's memory. The children of one dispatch share the area
``config.shared_namespace`` — by default named after the parent, ``shared:{parent_session_id}:``.
Each child gets a handle: ``current_shared_memory()`` inside its tools (while ``dispatch`` /
``dispatch_all`` runs its turn) and ``dispatcher.shared_memory_for(child_id)`` from anywhere
(the child's metadata names the area). Others reach it as ``manager.shared_memory(parent_id,
namespace)``.

Checkpoints: a ``dispatch`` / ``dispatch_all`` child is checkpointed like any session (at
creation and after its turn). A ``dispatch_stream`` child gets exactly one automatic checkpoint,
at finalize — when its stream ends (completed, failed, or abandoned) — and none of its own
before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import JsonValue

from agcore_lab.agent.agent import Agent
from agcore_lab.agent.events import TurnDone, TurnEvent
from agcore_lab.agent.turn import TurnDraft
from agcore_lab.agent.turn_commit import MemoryWrites, TurnMemory
from agcore_lab.aio import iterate_sync, run_sync
from agcore_lab.engine.dispatch_all import DispatchRun
from agcore_lab.engine.dispatch_types import (
    _CURRENT_SHARED,
    ChildCreated,
    Completed,
    DispatchConfig,
    DispatchError,
    DispatchProgress,
    SharedMemory,
    SubTaskError,
    SubTaskResult,
    current_shared_memory,
)
from agcore_lab.engine.oplog import log_op
from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.usage import Usage
from agcore_lab.store._trusted import trusted
from agcore_lab.store.base import MemoryEntry, MemoryIfUnset, Store

if TYPE_CHECKING:
    from agcore_lab.agent.session import AgentSession
    from agcore_lab.engine.host import ManagerHost

__all__ = [
    "ChildCreated",
    "Completed",
    "DispatchConfig",
    "DispatchError",
    "Dispatcher",
    "DispatchProgress",
    "SharedMemory",
    "SubTaskError",
    "SubTaskResult",
    "current_shared_memory",
]

logger = logging.getLogger("agcore_lab")

RESULT_SUMMARY_KEY = "result_summary"
SHARED_KEY = "shared_memory"  # child metadata: {"parent_id": ..., "namespace": ...}
SUMMARY_CHARS = 1000


class Dispatcher:
    """Sub-agent dispatch for the sessions of one manager; get it as ``manager.dispatcher``
    (the manager's ``dispatch*`` methods call it).

    Attributes:
        last_dispatch: The progress of the latest ``dispatch_all``.
    """

    def __init__(self, host: ManagerHost) -> None:
        self._host = host
        self.last_dispatch: DispatchProgress | None = None

    @property
    def store(self) -> Store:
        """The host's store."""
        return self._host.store

    def shared_memory(self, parent_id: str, namespace: str) -> SharedMemory:
        """The sibling-shared memory area ``namespace`` of ``parent_id``'s children."""
        return SharedMemory(self.store, parent_id, namespace)

    def shared_memory_for(self, child_id: str) -> SharedMemory:
        """The shared memory of the dispatch that created ``child_id`` (its siblings' area).

        Raises:
            SessionNotFoundError: Unknown child.
            InvalidInputError: The session was not created by a dispatch.
        """
        record = self._host.require_stored(child_id)
        named = record.metadata.get(SHARED_KEY)
        if not isinstance(named, dict):
            raise InvalidInputError(
                "this session was not created by a dispatch", session_id=child_id
            )
        return SharedMemory(self.store, str(named["parent_id"]), str(named["namespace"]))

    def _shared(self, parent_id: str, config: DispatchConfig) -> SharedMemory:
        return SharedMemory(self.store, parent_id, config.shared_namespace or parent_id)

    def child_memory(self, child_id: str) -> dict[str, JsonValue]:
        """A child's memory (values by key), read from the store."""
        return {e.key: e.value for e in self.store.memory_entries(child_id)}

    async def _inherited(self, parent_id: str, config: DispatchConfig) -> list[MemoryEntry]:
        parent = await self._host.get_or_recover(parent_id)
        if not config.inherit_session_memory or config.bridge_keys is None:
            return []
        wanted = set(config.bridge_keys)
        return [
            e
            for e in parent.session_memory.list_entries()  # the snapshot, taken now
            if (not wanted or e.key in wanted) and not e.key.startswith("shared:")
        ]

    @staticmethod
    def _told(sub_agent: Agent, inherited: list[MemoryEntry]) -> Agent:
        # The bridged keys, stated in the child's system prompt.
        if not inherited:
            return sub_agent
        facts = "\n".join(
            f"- {e.key}: {json.dumps(e.value, ensure_ascii=False)}" for e in inherited
        )
        intro = "From the session that gave you this task:"
        prompt = f"{sub_agent.system_prompt}\n\n{intro}\n{facts}".strip()
        return dataclasses.replace(sub_agent, system_prompt=prompt)

    def _note(self, parent_id: str, config: DispatchConfig) -> dict[str, JsonValue]:
        # The shared-memory note, stored with the child (one write, not two).
        namespace = self._shared(parent_id, config).namespace
        return {SHARED_KEY: {"parent_id": parent_id, "namespace": namespace}}

    @staticmethod
    def _bridge(child: AgentSession, parent_id: str, inherited: list[MemoryEntry]) -> None:
        for entry in inherited:
            child.session_memory.set(entry.key, entry.value, {**entry.metadata, "from": parent_id})

    async def _spawn(
        self, parent_id: str, sub_agent: Agent, config: DispatchConfig, *, stream: bool = False
    ) -> AgentSession:
        inherited = await self._inherited(parent_id, config)
        child_id = await self._host.create_child(
            parent_id,
            self._told(sub_agent, inherited),
            defer_checkpoint=stream,
            metadata=self._note(parent_id, config),
        )
        child = await self._host.get_or_recover(child_id)
        self._bridge(child, parent_id, inherited)
        return child

    async def _create_batch(
        self,
        parent_id: str,
        agents: Sequence[Agent],
        inherited: list[MemoryEntry],
        config: DispatchConfig,
    ) -> list[AgentSession]:
        # Children of a dispatch_all made together (see DispatchRun): one write, with their
        # start checkpoints and their turns' leases.
        note = self._note(parent_id, config)
        ids = await self._host.create_children(
            parent_id,
            [self._told(agent, inherited) for agent in agents],
            metadata=[note] * len(agents),
            reserve=True,
        )
        children = [await self._host.get_or_recover(child_id) for child_id in ids]
        for child in children:
            self._bridge(child, parent_id, inherited)
        return children

    @staticmethod
    def _summary_with_commit(written: list[MemoryIfUnset]) -> TurnMemory:
        # The result summary goes with the turn's commit when nothing writes after it (see
        # agcore_lab.agent.turn_commit), written there only if the child has none of its own
        # (decided in the commit's transaction); ``written`` holds it, so _result reads
        # nothing when it was written.
        def writes(draft: TurnDraft) -> MemoryWrites:
            if draft.status == "max_tool_rounds":
                return ()  # a failure has no summary
            summary = draft.reply[:SUMMARY_CHARS]
            written.append(MemoryIfUnset(RESULT_SUMMARY_KEY, summary, {"written_by": "dispatch"}))
            return written[-1:]

        return writes

    def _result(
        self,
        child: AgentSession,
        task: str,
        response: str,
        usage: Usage,
        written: Sequence[MemoryIfUnset] = (),
    ) -> SubTaskResult:
        # A completed child is one with a result_summary; only other outcomes are marked.
        if written and written[-1].written:
            summary = written[-1].value
        else:  # the child's own summary, if it has one
            summary = child.session_memory.get(RESULT_SUMMARY_KEY)
        if summary is None:
            summary = response[:SUMMARY_CHARS]
            child.session_memory.set(RESULT_SUMMARY_KEY, summary, {"written_by": "dispatch"})
        # Built from the child's own turn result (already checked): no validation pass.
        return trusted(
            SubTaskResult,
            {
                "child_id": child.session_id,
                "task": task,
                "response": response,
                "usage": usage,
                "summary": summary if isinstance(summary, str) else json.dumps(summary),
            },
        )

    async def dispatch(
        self,
        parent_id: str,
        sub_agent: Agent,
        task: str,
        config: DispatchConfig | None = None,
        *,
        on_child: Callable[[str], object] | None = None,
    ) -> SubTaskResult:
        """Run ``task`` as one turn of a new child session of ``parent_id``.

        ``on_child(child_id)`` is called as soon as the child session exists (before its turn).

        Raises:
            SessionNotFoundError: Unknown parent.
            SubTaskError: The child failed or timed out (``status`` says which).
        """
        config = config or DispatchConfig()
        child = await self._spawn(parent_id, sub_agent, config)
        if on_child is not None:
            on_child(child.session_id)
        return await self._run(child, parent_id, task, config)

    async def _run(
        self, child: AgentSession, parent_id: str, task: str, config: DispatchConfig
    ) -> SubTaskResult:
        # The task as the child's one turn (dispatch, and each child of dispatch_all).
        log_op(
            "dispatch_started", "dispatch started", session_id=parent_id, child_id=child.session_id
        )
        token = _CURRENT_SHARED.set(self._shared(parent_id, config))  # this task's context only
        written: list[MemoryIfUnset] = []
        child.turn_memory = self._summary_with_commit(written)
        try:
            if config.timeout is None:
                turn = await child.submit_turn(task)
            else:
                async with asyncio.timeout(config.timeout):
                    turn = await child.submit_turn(task)
        except TimeoutError as exc:
            raise self._failure(child, task, "timed_out", exc) from exc
        except asyncio.CancelledError:
            self._mark(child, "cancelled")
            raise
        except Exception as exc:
            raise self._failure(child, task, "failed", exc) from exc
        finally:
            _CURRENT_SHARED.reset(token)
            child.turn_memory = None
        log_op(
            "dispatch_finished", "dispatch finished", child_id=child.session_id, status="completed"
        )
        return self._result(child, task, turn.reply, turn.usage, written)

    def _mark(self, child: AgentSession, status: str) -> None:
        # Stored in the child's metadata, for the tree and the sessions table.
        try:
            child.write_metadata("dispatch", status)
        except Exception:  # informative only: never mask the task's own outcome
            logger.warning("could not mark child %s as %s", child.session_id, status, exc_info=True)

    def _failure(
        self,
        child: AgentSession,
        task: str,
        status: Literal["failed", "timed_out"],
        exc: BaseException,
    ) -> SubTaskError:
        self._mark(child, status)
        log_op("dispatch_finished", "dispatch finished", child_id=child.session_id, status=status)
        what = "timed out" if status == "timed_out" else f"failed: {exc!r}"
        return SubTaskError(
            f"sub-task {what}", child_id=child.session_id, task=task, status=status, error=exc
        )

    async def dispatch_all(
        self,
        parent_id: str,
        tasks: Sequence[tuple[Agent, str]],
        config: DispatchConfig | None = None,
        *,
        on_progress: Callable[[DispatchProgress], None] | None = None,
    ) -> list[SubTaskResult | SubTaskError]:
        """Run many tasks as child sessions, at most ``config.max_concurrency`` at once.

        Returns results in input order; a task that failed or timed out keeps its place as a
        :class:`SubTaskError`. Cancelling this call cancels the running children cleanly,
        marks the unfinished ones cancelled and keeps what finished (results and checkpoints).
        Progress is in ``self.last_dispatch`` and, if given, ``on_progress(progress)``.
        """
        config = config or DispatchConfig()
        if isinstance(tasks, str | bytes) or not all(len(t) == 2 for t in tasks):
            raise InvalidInputError("tasks are (sub_agent, task_text) pairs")
        run = DispatchRun(self, parent_id, tasks, config, on_progress)
        self.last_dispatch = run.progress
        return await run.run()

    async def dispatch_stream(
        self,
        parent_id: str,
        sub_agent: Agent,
        task: str,
        config: DispatchConfig | None = None,
    ) -> AsyncIterator[ChildCreated | TurnEvent | Completed | DispatchError]:
        """Stream one sub-task: ``ChildCreated``, the child's turn events, then ``Completed``
        or ``DispatchError``. The child's turn is committed when its stream ends; the child's
        one automatic checkpoint is written then (finalize), before the last event — or when
        the stream is abandoned. Inside a streamed child's tools use
        ``dispatcher.shared_memory_for(child_id)`` (a stream's steps may run in different
        contexts, so ``current_shared_memory()`` is not set there)."""
        config = config or DispatchConfig()
        child = await self._spawn(parent_id, sub_agent, config, stream=True)
        stream = child.submit_turn_stream(task)
        finalized = False

        async def finalize() -> None:
            nonlocal finalized
            if finalized:
                return
            finalized = True
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:  # releases the child's turn lock before the checkpoint
                await aclose()
            await self._host.finalize_child(child)

        try:
            yield ChildCreated(child_id=child.session_id)
            done: TurnDone | None = None
            try:
                async with asyncio.timeout(config.timeout):
                    async for event in stream:
                        if isinstance(event, TurnDone):
                            done = event
                        yield event
            except Exception as exc:
                status: Literal["failed", "timed_out"] = (
                    "timed_out" if isinstance(exc, TimeoutError) else "failed"
                )
                self._mark(child, status)
                await finalize()
                yield DispatchError(child_id=child.session_id, error=f"{status}: {exc!r}")
                return
            assert done is not None
            result = self._result(child, task, done.result.reply, done.result.usage)
            await finalize()
            yield Completed(result=result)
        finally:
            await finalize()

    # -- sync twins -------------------------------------------------------------------------

    def dispatch_sync(
        self, parent_id: str, sub_agent: Agent, task: str, config: DispatchConfig | None = None
    ) -> SubTaskResult:
        """Blocking twin of :meth:`dispatch`."""
        return run_sync(self.dispatch(parent_id, sub_agent, task, config))

    def dispatch_all_sync(
        self,
        parent_id: str,
        tasks: Sequence[tuple[Agent, str]],
        config: DispatchConfig | None = None,
        *,
        on_progress: Callable[[DispatchProgress], None] | None = None,
    ) -> list[SubTaskResult | SubTaskError]:
        """Blocking twin of :meth:`dispatch_all` (Ctrl-C cancels the children cleanly)."""
        return run_sync(self.dispatch_all(parent_id, tasks, config, on_progress=on_progress))

    def dispatch_stream_sync(
        self, parent_id: str, sub_agent: Agent, task: str, config: DispatchConfig | None = None
    ) -> Any:
        """Blocking twin of :meth:`dispatch_stream` (a plain iterator)."""
        return iterate_sync(self.dispatch_stream(parent_id, sub_agent, task, config))
