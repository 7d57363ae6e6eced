"""Session-memory writes as SQLite's store takes them: checked and encoded before its write
starts (bad input writes nothing), then appended in the write, a conditional one
(:class:`~agcore_lab.store.base.MemoryIfUnset`) only while its key has no live entry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue

from agcore_lab.checks import check_json
from agcore_lab.errors import InvalidInputError
from agcore_lab.store._json import compact
from agcore_lab.store._memory import append_memory, latest_version
from agcore_lab.store.base import MemoryIfUnset, MemoryWrite

__all__ = ["append_writes", "encoded_write", "memory_json"]


def encoded_write(session_id: str, write: MemoryWrite) -> tuple[str, str, str, bool]:
    """A commit's memory write checked and encoded: key, value and metadata JSON, and
    whether it is stored only when the key has no live entry (a ``MemoryIfUnset``).

    Raises:
        InvalidInputError: The key is not a string, or the value or metadata is not JSON.
    """
    if isinstance(write, MemoryIfUnset):
        return (write.key, *memory_json(session_id, write.key, write.value, write.metadata), True)
    key, value, metadata = write
    return (key, *memory_json(session_id, key, value, metadata), False)


def append_writes(
    conn: Any,
    session_id: str,
    encoded: Sequence[tuple[str, str, str, bool]],
    now: str,
    memory_at: int | None,
) -> list[bool]:
    """Append a commit's ``encoded`` memory writes after ``memory_at`` (the version the commit
    read with its checkpoint; read here when ``None``): whether each one was written (a
    conditional one is not when its key is set)."""
    at = latest_version(conn, session_id) if memory_at is None else memory_at
    wrote = []
    for key, value_json, metadata_json, unless_set in encoded:
        after = append_memory(
            conn, session_id, key, value_json, metadata_json, now, after=at, unless_set=unless_set
        )
        wrote.append(after != at)
        at = after
    return wrote


def memory_json(
    session_id: str, key: str, value: JsonValue, metadata: dict[str, JsonValue]
) -> tuple[str, str]:
    """The value's and metadata's JSON, checked before a write starts (bad input writes
    nothing).

    Raises:
        InvalidInputError: The key is not a string, or the value or metadata is not JSON.
    """
    if not isinstance(key, str):
        raise InvalidInputError(f"memory key must be a string, got {type(key).__name__}")
    check_json(value, f"memory value for {key!r}")
    check_json(metadata, f"memory metadata for {key!r}")
    try:
        return compact(value), compact(metadata)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"memory value for {key!r} is not JSON-serializable: {exc}", session_id=session_id
        ) from exc
