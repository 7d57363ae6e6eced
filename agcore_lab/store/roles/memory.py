"""The ``MemoryStore`` role of the :class:`~agcore_lab.store.base.Store` protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pydantic import JsonValue

    from agcore_lab.store.base import MemoryEntry

__all__ = ["MemoryStore"]


@runtime_checkable
class MemoryStore(Protocol):
    """Session memory: an append-only, versioned key-value log per session.

    One role of :class:`~agcore_lab.store.base.Store`; its async twin is in
    :mod:`agcore_lab.store.aio`.
    """

    def memory_set(
        self, session_id: str, key: str, value: JsonValue, metadata: dict[str, JsonValue]
    ) -> MemoryEntry:
        """Set a memory entry (keeping its first ``created_at``); return it."""
        ...

    def memory_delete(self, session_id: str, key: str) -> bool:
        """Delete a memory entry; ``False`` if there was none."""
        ...

    def memory_entries(
        self, session_id: str, *, at_version: int | None = None
    ) -> list[MemoryEntry]:
        """Live entries, by key; as of ``at_version`` when given."""
        ...

    def memory_version(self, session_id: str) -> int:
        """The number of memory writes so far (0 for none)."""
        ...
