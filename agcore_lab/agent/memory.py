"""``SessionMemory``: a session's key-value memory, persisted in the store.

Values are any JSON value (strings, numbers, lists, objects, ``None``); each entry also keeps
metadata and when it was first created. Every write goes to the store first and then to the
in-memory view, so a failed write changes nothing. The store keeps every write as a numbered
version, so a checkpoint can later name "memory as of version N".

Example:
    >>> from agcore_lab.store.sqlite import SqliteStore
    >>> from agcore_lab.store.base import SessionRecord
    >>> store = SqliteStore(":memory:")
    >>> store.create_session(SessionRecord(session_id="s1", agent_name="a"))
    >>> memory = SessionMemory(store, "s1")
    >>> _ = memory.set("facts", {"capital": "Paris"}, metadata={"source": "user"})
    >>> memory.get("facts")
    {'capital': 'Paris'}
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import JsonValue

from agcore_lab.errors import InvalidInputError
from agcore_lab.store.base import MemoryEntry, Store

__all__ = ["SessionMemory"]


class SessionMemory:
    """Key-value memory of one session.

    Methods are synchronous (each is one short local store transaction). Safe from several
    threads as far as the store is. Reads see every writer's entries — other objects,
    kernels and processes on the same store: each read first compares the store's memory
    version (one indexed read) with the one it holds and reloads when it moved. Writes of
    different keys by different writers all survive; two writes of the *same* key are
    last-writer-wins (each is one entry of the session's memory log, so both stay visible in
    the log and in checkpoints taken between them).
    """

    def __init__(self, store: Store, session_id: str) -> None:
        self._store = store
        self.session_id = session_id
        self._entries: dict[str, MemoryEntry] = {}
        self._version = -1
        self.refresh()

    @classmethod
    def deferred(cls, store: Store, session_id: str) -> SessionMemory:
        """A memory that reads the store only when first used (no I/O now)."""
        memory = cls.__new__(cls)
        memory._store, memory.session_id = store, session_id
        memory._entries, memory._version = {}, -1  # -1: never equal, so the first use reads
        return memory

    def refresh(self) -> None:
        """Reload the entries from the store."""
        self._version = self._store.memory_version(self.session_id)
        self._entries = {e.key: e for e in self._store.memory_entries(self.session_id)}

    def _current(self) -> dict[str, MemoryEntry]:
        version = self._store.memory_version(self.session_id)
        if version != self._version:
            if version == 0:  # never written: nothing to read
                self._entries, self._version = {}, 0
            else:
                self.refresh()
        return self._entries

    def set(
        self, key: str, value: JsonValue, metadata: dict[str, JsonValue] | None = None
    ) -> MemoryEntry:
        """Store ``value`` under ``key``; return the entry.

        Raises:
            InvalidInputError: ``key`` is not a non-empty string, or the value or metadata is
                not JSON-serializable. Nothing is stored then.
        """
        if not isinstance(key, str) or not key:
            raise InvalidInputError(
                f"memory keys are non-empty strings, got {key!r}", session_id=self.session_id
            )
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInputError(
                f"metadata must be a mapping of str to JSON values, got {type(metadata).__name__}"
            )
        entry = self._store.memory_set(self.session_id, key, value, dict(metadata or {}))
        if entry.version == self._version + 1:  # nobody else wrote in between
            self._entries[key], self._version = entry, entry.version
        return entry

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default``."""
        entry = self._current().get(key)
        return entry.value if entry is not None else default

    def get_entry(self, key: str) -> MemoryEntry | None:
        """The whole entry (value, metadata, timestamps) under ``key``, or ``None``."""
        return self._current().get(key)

    def delete(self, key: str) -> bool:
        """Remove ``key``; ``False`` if it was not there."""
        removed = self._store.memory_delete(self.session_id, key)
        self.refresh()
        return removed

    def list_entries(self) -> list[MemoryEntry]:
        """All entries, sorted by key."""
        entries = self._current()
        return [entries[k] for k in sorted(entries)]

    def to_dict(self) -> dict[str, JsonValue]:
        """The values by key (a copy)."""
        return {k: e.value for k, e in sorted(self._current().items())}

    @property
    def version(self) -> int:
        """The store's memory version for this session (number of writes so far)."""
        return self._store.memory_version(self.session_id)

    def __contains__(self, key: object) -> bool:
        return key in self._current()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._current()))

    def __len__(self) -> int:
        return len(self._current())

    def __repr__(self) -> str:
        return f"SessionMemory({self.session_id!r}, keys={sorted(self._current())})"
