"""``SessionMemory``: a session's key-value memory, kept in the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from agcore_lab import Agent, AgentSession, InvalidInputError, SessionMemory, SqliteStore
from agcore_lab.store.base import SessionRecord


@pytest.fixture
def memory() -> SessionMemory:
    store = SqliteStore(":memory:")
    store.create_session(SessionRecord(session_id="s1", agent_name="a"))
    return SessionMemory(store, "s1")


def test_set_get_delete(memory: SessionMemory) -> None:
    entry = memory.set("city", "Paris")
    assert (entry.key, entry.value, entry.metadata) == ("city", "Paris", {})
    assert memory.get("city") == "Paris"
    assert memory.get("missing") is None
    assert memory.get("missing", "fallback") == "fallback"
    assert "city" in memory and len(memory) == 1
    assert memory.delete("city") is True
    assert memory.delete("city") is False
    assert memory.get("city") is None and "city" not in memory
    assert memory.get_entry("city") is None


def test_list_entries_is_sorted_by_key(memory: SessionMemory) -> None:
    for key in ["b", "c", "a"]:
        memory.set(key, key.upper())
    assert [e.key for e in memory.list_entries()] == ["a", "b", "c"]
    assert list(memory) == ["a", "b", "c"]
    assert memory.to_dict() == {"a": "A", "b": "B", "c": "C"}


@pytest.mark.parametrize(
    "value",
    ["text", "", 0, -7, 2.5, True, False, None, [], [1, "a", None], {"a": {"b": [1, 2.5, True]}}],
)
def test_any_json_value_is_kept_with_its_type(memory: SessionMemory, value: JsonValue) -> None:
    memory.set("k", value)
    for view in (memory, SessionMemory(memory._store, "s1")):  # live and reloaded
        assert view.get("k") == value
        assert type(view.get("k")) is type(value)


def test_metadata_is_kept(memory: SessionMemory) -> None:
    memory.set("fact", 42, metadata={"source": "user", "confidence": 0.9, "tags": ["x"]})
    entry = memory.get_entry("fact")
    assert entry is not None
    assert entry.metadata == {"source": "user", "confidence": 0.9, "tags": ["x"]}


def test_created_at_is_kept_when_a_value_is_updated(memory: SessionMemory) -> None:
    first = memory.set("k", 1)
    second = memory.set("k", 2)
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert memory.get_entry("k") == second
    assert memory.version == 2


@pytest.mark.parametrize("key", ["", None, 3, ("a",)])
def test_a_bad_key_is_rejected_and_nothing_is_stored(memory: SessionMemory, key: Any) -> None:
    with pytest.raises(InvalidInputError, match="memory keys"):
        memory.set(key, "value")
    assert len(memory) == 0 and memory.version == 0


@pytest.mark.parametrize(
    ("value", "metadata"),
    [
        (object(), None),
        ({1, 2}, None),
        ([1, object()], None),
        (float("nan"), None),
        ("ok", {"m": object()}),
    ],
)
def test_a_non_json_value_is_rejected_and_nothing_is_stored(
    memory: SessionMemory, value: Any, metadata: Any
) -> None:
    memory.set("k", "before")
    with pytest.raises(InvalidInputError, match="not JSON"):
        memory.set("k", value, metadata)
    assert memory.get("k") == "before"
    assert SessionMemory(memory._store, "s1").get("k") == "before"
    assert memory.version == 1


def test_memory_is_persisted_across_load(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    agent = Agent(name="a")
    session = AgentSession(agent, store=SqliteStore(path))
    session.session_memory.set("plan", {"steps": ["a", "b"], "done": 1}, {"by": "me"})
    session.session_memory.set("gone", True)
    session.session_memory.delete("gone")

    again = AgentSession.load(session.session_id, agent, store=SqliteStore(path))
    assert again.session_memory.to_dict() == {"plan": {"steps": ["a", "b"], "done": 1}}
    entry = again.session_memory.get_entry("plan")
    original = session.session_memory.get_entry("plan")
    assert entry == original and entry is not None and entry.metadata == {"by": "me"}
    assert again.session_memory.version == 3


def test_reads_see_writes_made_through_another_store(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    session = AgentSession(Agent(name="a"), store=SqliteStore(path))
    other = SessionMemory(SqliteStore(path), session.session_id)
    other.set("from-elsewhere", [1, 2])
    assert "from-elsewhere" in session.session_memory  # no refresh() needed
    assert session.session_memory.get("from-elsewhere") == [1, 2]
    other.delete("from-elsewhere")
    assert session.session_memory.to_dict() == {}


def test_memory_belongs_to_one_session() -> None:
    store = SqliteStore(":memory:")
    first = AgentSession(Agent(name="a"), store=store)
    second = AgentSession(Agent(name="a"), store=store)
    first.session_memory.set("k", "first")
    assert second.session_memory.get("k") is None
    assert SessionMemory(store, second.session_id).list_entries() == []


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(key=st.text(min_size=1, max_size=20), value=JSON)
def test_any_json_value_round_trips_through_the_store(key: str, value: JsonValue) -> None:
    store = SqliteStore(":memory:")
    memory = SessionMemory(store, "s1")
    entry = memory.set(key, value, {"v": value})
    reloaded = SessionMemory(store, "s1")
    assert reloaded.get(key) == value == entry.value
    assert reloaded.get_entry(key) == entry
