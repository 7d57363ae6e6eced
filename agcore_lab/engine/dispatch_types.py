"""The records of sub-agent dispatch: configuration, results, stream events, progress, and
the siblings' shared memory. The operations are in :mod:`agcore_lab.engine.dispatch`."""

from __future__ import annotations

import contextvars
import dataclasses
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agcore_lab.checks import CheckedModel
from agcore_lab.errors import InvalidInputError, SubTaskError
from agcore_lab.llm.usage import Usage
from agcore_lab.store.base import Store

__all__ = [
    "ChildCreated",
    "Completed",
    "DispatchConfig",
    "DispatchError",
    "DispatchFailed",
    "DispatchProgress",
    "SharedMemory",
    "SubTaskError",
    "SubTaskResult",
    "current_shared_memory",
]


class DispatchConfig(CheckedModel):
    """How sub-agents are dispatched.

    Attributes:
        max_concurrency: Children running at once in ``dispatch_all``.
        inherit_session_memory: Give children a snapshot of the parent's memory.
        bridge_keys: Which keys: ``None`` none, ``[]`` all, a list those keys.
        shared_namespace: Name of the memory area the siblings of one dispatch share: keys
            ``shared:{name}:{key}`` in the parent's memory. ``None`` (the default) names it
            after the parent session, ``shared:{parent_session_id}:``. Each child gets a
            handle: ``current_shared_memory()`` inside its tools, and
            ``dispatcher.shared_memory_for(child_id)`` from anywhere.
        timeout: Seconds a child's task may take before it is marked timed out.
    """

    model_config = ConfigDict(frozen=True)

    max_concurrency: int = Field(default=10, ge=1)
    inherit_session_memory: bool = True
    bridge_keys: list[str] | None = None
    shared_namespace: str | None = None
    timeout: float | None = Field(default=None, gt=0)


class SubTaskResult(BaseModel):
    """What a child hands back."""

    model_config = ConfigDict(frozen=True)

    child_id: str
    task: str = ""
    response: str
    usage: Usage
    summary: str | None = None
    status: Literal["completed"] = "completed"


class ChildCreated(BaseModel):
    """``dispatch_stream``: the child session exists."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["child_created"] = "child_created"
    child_id: str


class Completed(BaseModel):
    """``dispatch_stream``: the child finished; its result."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["completed"] = "completed"
    result: SubTaskResult


class DispatchFailed(BaseModel):
    """``dispatch_stream``: the child failed (the stream's error event).

    An event, not an exception: test for it with ``isinstance(event, DispatchFailed)``.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    kind: Literal["error"] = "error"
    child_id: str | None
    error: str


@dataclasses.dataclass
class DispatchProgress:
    """Live counts of a ``dispatch_all`` (read it, or get it through ``on_progress``).

    ``child_ids[i]`` is set when task ``i`` starts, its child session existing by then
    (``on_progress`` is called then), so a watcher sees each child while it runs (a child made
    ahead for a task that never started keeps ``None``); ``statuses[i]`` is ``waiting``,
    ``running``, ``completed``, ``failed``, ``timed_out`` or ``cancelled``.
    """

    total: int
    waiting: int
    running: int = 0
    done: int = 0
    failed: int = 0
    peak_running: int = 0
    child_ids: list[str | None] = dataclasses.field(default_factory=list)
    statuses: list[str] = dataclasses.field(default_factory=list)

    @property
    def finished(self) -> bool:
        """All tasks have an outcome."""
        return self.done + self.failed == self.total


class SharedMemory:
    """Memory shared by the children of one parent: keys ``shared:{namespace}:{key}`` in the
    parent session's memory. Reads go to the store, so siblings see each other's writes."""

    def __init__(self, store: Store, parent_id: str, namespace: str) -> None:
        if not namespace or ":" in namespace:
            raise InvalidInputError("a shared namespace is a non-empty name without ':'")
        self._store, self.parent_id, self.namespace = store, parent_id, namespace
        self.prefix = f"shared:{namespace}:"

    def set(self, key: str, value: JsonValue, metadata: dict[str, JsonValue] | None = None) -> None:
        """Write ``key`` for every sibling to see."""
        self._store.memory_set(self.parent_id, self.prefix + key, value, dict(metadata or {}))

    def get(self, key: str, default: Any = None) -> Any:
        """Read ``key`` (``default`` when absent)."""
        return self.to_dict().get(key, default)

    def to_dict(self) -> dict[str, JsonValue]:
        """Every shared key and value."""
        return {
            e.key[len(self.prefix) :]: e.value
            for e in self._store.memory_entries(self.parent_id)
            if e.key.startswith(self.prefix)
        }


DispatchError = DispatchFailed
"""Deprecated alias of :class:`DispatchFailed` (the old name read like an exception class,
but ``except DispatchError:`` raises ``TypeError``). Use ``DispatchFailed``."""


_CURRENT_SHARED: contextvars.ContextVar[SharedMemory | None] = contextvars.ContextVar(
    "agcore_shared_memory", default=None
)


def current_shared_memory() -> SharedMemory:
    """The shared memory of the dispatch whose child is running now — call it inside a tool
    of a sub-agent run by ``dispatch`` or ``dispatch_all`` to exchange values with siblings.

    Example:
        >>> def leave_note(text: str) -> str:
        ...     current_shared_memory().set("note", text)
        ...     return "noted"

    Raises:
        InvalidInputError: Not inside a dispatched child's turn (use
            ``dispatcher.shared_memory_for(child_id)`` there).
    """
    shared = _CURRENT_SHARED.get()
    if shared is None:
        raise InvalidInputError(
            "no dispatched child is running here; current_shared_memory() works inside the "
            "tools of a dispatch/dispatch_all child — elsewhere use "
            "manager.dispatcher.shared_memory_for(child_id)"
        )
    return shared
