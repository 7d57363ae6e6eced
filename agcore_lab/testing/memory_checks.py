"""Store conformance checks for session memory (see :mod:`agcore_lab.testing.store_conformance`)."""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from agcore_lab.errors import InvalidInputError, StaleSessionError
from agcore_lab.store.base import MemoryIfUnset, Store
from agcore_lab.testing._support import expect, expect_equal, expect_raises, session_record

__all__ = [
    "check_commit_memory_if_unset",
    "check_memory_json_values",
    "check_memory_keeps_created_at",
    "check_memory_rejects_non_json",
    "check_memory_set_get_delete",
    "check_memory_versions",
]


def check_memory_set_get_delete(store: Store) -> None:
    """Set returns the stored entry; entries are listed by key; delete says if one existed."""
    store.create_session(session_record())
    entry = store.memory_set("s1", "b", "two", {"source": "user"})
    expect_equal(
        (entry.key, entry.value, entry.metadata), ("b", "two", {"source": "user"}), "memory_set"
    )
    store.memory_set("s1", "a", 1, {})
    expect_equal(
        [(e.key, e.value) for e in store.memory_entries("s1")],
        [("a", 1), ("b", "two")],
        "memory entries by key",
    )
    expect_equal(store.memory_entries("s1")[1], entry, "a listed entry equals the returned one")
    expect_equal(store.memory_delete("s1", "a"), True, "memory_delete of a set key")
    expect_equal(store.memory_delete("s1", "a"), False, "memory_delete a second time")
    expect_equal(store.memory_delete("s1", "never"), False, "memory_delete of an unknown key")
    expect_equal([e.key for e in store.memory_entries("s1")], ["b"], "memory after delete")
    store.create_session(session_record("s2"))
    expect_equal(store.memory_entries("s2"), [], "memory is per session")


def check_memory_versions(store: Store) -> None:
    """Each write (set or delete) is a new version; ``at_version`` shows memory as it was."""
    store.create_session(session_record())
    expect_equal(store.memory_version("s1"), 0, "memory_version before any write")
    expect_equal(store.memory_set("s1", "x", 1, {}).version, 1, "version of the first write")
    store.memory_set("s1", "y", "why", {})
    store.memory_set("s1", "x", 2, {})
    store.memory_delete("s1", "y")
    expect_equal(store.memory_version("s1"), 4, "memory_version after four writes")
    store.memory_delete("s1", "y")  # nothing to delete: not a write
    expect_equal(store.memory_version("s1"), 4, "memory_version after a no-op delete")

    def values(version: int | None) -> dict[str, JsonValue]:
        return {e.key: e.value for e in store.memory_entries("s1", at_version=version)}

    expect_equal(values(0), {}, "memory at version 0")
    expect_equal(values(1), {"x": 1}, "memory at version 1")
    expect_equal(values(2), {"x": 1, "y": "why"}, "memory at version 2")
    expect_equal(values(3), {"x": 2, "y": "why"}, "memory at version 3")
    expect_equal(values(4), {"x": 2}, "memory at version 4")
    expect_equal(values(None), {"x": 2}, "memory now")


def check_memory_json_values(store: Store) -> None:
    """Any JSON value round-trips with its type: str, int, float, bool, null, list, object."""
    store.create_session(session_record())
    values: dict[str, JsonValue] = {
        "str": "naïve 文字",
        "empty": "",
        "int": 42,
        "big": 2**53,
        "float": 1.5,
        "true": True,
        "false": False,
        "null": None,
        "list": [1, "two", 3.0, None, [True]],
        "dict": {"a": {"b": [1, {"c": None}]}, "d": False},
    }
    for key, value in values.items():
        store.memory_set("s1", key, value, {"kind": key})
    got = {e.key: e.value for e in store.memory_entries("s1")}
    expect_equal(got, values, "memory values")
    for key, value in values.items():
        expect(type(got[key]) is type(value), f"memory value {key!r} keeps type {type(value)}")
    inner = got["list"]
    expect(
        isinstance(inner, list) and type(inner[2]) is float and inner[4] == [True],
        "types inside a list are kept",
    )


def check_memory_rejects_non_json(store: Store) -> None:
    """A value or metadata that is not JSON (NaN and Infinity included) raises
    ``InvalidInputError`` and stores nothing."""
    store.create_session(session_record())
    store.memory_set("s1", "k", "before", {})
    bad: list[tuple[Any, Any]] = [
        (object(), {}),
        ({1, 2}, {}),
        ({"nested": object()}, {}),
        (float("nan"), {}),
        ([1.0, float("inf")], {}),
        ("fine", {"meta": object()}),
    ]
    for value, metadata in bad:
        expect_raises(
            InvalidInputError,
            f"memory_set of {value!r}",
            store.memory_set,
            "s1",
            "k",
            value,
            metadata,
        )
    expect_equal(store.memory_version("s1"), 1, "memory_version after rejected writes")
    expect_equal(
        [(e.key, e.value) for e in store.memory_entries("s1")],
        [("k", "before")],
        "memory after rejected writes",
    )


def check_memory_keeps_created_at(store: Store) -> None:
    """Updating an entry keeps its first ``created_at`` and moves ``updated_at``."""
    store.create_session(session_record())
    first = store.memory_set("s1", "k", 1, {"n": 1})
    second = store.memory_set("s1", "k", 2, {"n": 2})
    expect_equal(second.created_at, first.created_at, "created_at after an update")
    expect(second.updated_at >= first.updated_at, "updated_at does not go back")
    expect(second.version > first.version, "an update gets a newer version")
    (listed,) = store.memory_entries("s1")
    expect_equal(listed, second, "the listed entry after an update")
    expect(first.created_at.tzinfo is not None, "created_at is timezone-aware")


def check_commit_memory_if_unset(store: Store) -> None:
    """A commit's ``MemoryIfUnset`` write is stored only while its key has no live entry (as
    the commit's own earlier writes leave it), and says so in ``written`` once the commit is
    stored; a stale commit stores none and leaves ``written`` unset."""
    store.create_session(session_record())
    first = MemoryIfUnset("summary", "first", {"by": "dispatch"})
    store.commit(session_record(), memory=[first])
    expect_equal(first.written, True, "a MemoryIfUnset of an unset key")
    again, other = MemoryIfUnset("summary", "second", {}), MemoryIfUnset("other", [1], {})
    store.commit(session_record(version=1), memory=[again, ("plain", 2, {}), other])
    expect_equal((again.written, other.written), (False, True), "a set key and an unset one")
    entries = {e.key: (e.value, e.metadata) for e in store.memory_entries("s1")}
    expect_equal(
        entries,
        {"summary": ("first", {"by": "dispatch"}), "plain": (2, {}), "other": ([1], {})},
        "memory after a MemoryIfUnset of a set key",
    )
    expect_equal(store.memory_version("s1"), 3, "a write not made is not a version")
    same = MemoryIfUnset("fresh", "late", {})
    store.commit(session_record(version=2), memory=[("fresh", "early", {}), same])
    expect_equal(same.written, False, "a key set earlier in the same commit")
    expect_equal(_values(store).get("fresh"), "early", "the commit's own earlier write")
    store.memory_delete("s1", "summary")
    back = MemoryIfUnset("summary", "third", {})
    store.commit(session_record(version=3), memory=[back])
    expect_equal(back.written, True, "a MemoryIfUnset of a deleted key")
    expect_equal(_values(store).get("summary"), "third", "written again after a delete")
    lost = MemoryIfUnset("never", "lost", {})
    expect_raises(
        StaleSessionError,
        "a stale commit with a MemoryIfUnset",
        store.commit,
        session_record(version=1),
        memory=[lost],
    )
    expect_equal(lost.written, None, "the MemoryIfUnset of a stale commit")
    expect_equal(_values(store).get("never"), None, "nothing of a stale commit")


def _values(store: Store) -> dict[str, JsonValue]:
    return {e.key: e.value for e in store.memory_entries("s1")}
