"""The conformance suite every :class:`~agcore_lab.store.base.Store` backend must pass.

Each check is a plain function of one fresh, empty store; it raises ``AssertionError`` naming
what broke. Two ways to run them:

- in pytest, subclass :class:`StoreConformance` (the class name must start with ``Test``) and
  override :meth:`StoreConformance.make_store`; every check becomes one test;
- anywhere else, call :func:`run_store_conformance` with a factory.

Example:
    >>> from agcore_lab.store.sqlite import SqliteStore
    >>> run_store_conformance(lambda: SqliteStore(":memory:"))

The checks use only the protocol, so they hold for any backend (SQLite now, PostgreSQL later).
Facts only a backend can show (rows in a table, file locking) belong in that backend's tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import JsonValue

from agcore_lab.errors import (
    ConflictError,
    InvalidInputError,
    SessionNotFoundError,
    StorageError,
)
from agcore_lab.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_lab.llm.usage import ModelSpend, Usage
from agcore_lab.store.base import LinkRecord, SessionRecord, SlotRecord, Store

__all__ = [
    "CONFORMANCE_CHECKS",
    "ConformanceFailure",
    "StoreConformance",
    "StoreFactory",
    "run_store_conformance",
]

StoreFactory = Callable[[], Store]
Check = Callable[[Store], None]

_T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


class ConformanceFailure(AssertionError):
    """One or more conformance checks failed; the message lists each with its reason."""


# -- helpers ----------------------------------------------------------------------------------


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _expect_equal(actual: Any, expected: Any, what: str) -> None:
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


def _expect_raises(
    error: type[BaseException], what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> BaseException:
    try:
        fn(*args, **kwargs)
    except error as exc:
        return exc
    except Exception as exc:
        raise AssertionError(f"{what}: expected {error.__name__}, got {exc!r}") from exc
    raise AssertionError(f"{what}: expected {error.__name__}, nothing was raised")


def _session(session_id: str = "s1", **changes: Any) -> SessionRecord:
    fields: dict[str, Any] = {
        "session_id": session_id,
        "agent_name": "agent",
        "created_at": _T0,
        "updated_at": _T0,
    }
    fields.update(changes)
    return SessionRecord(**fields)


def _links(
    messages: list[Message], prefix: str, parent: LinkRecord | None = None
) -> list[LinkRecord]:
    """Chain ``messages`` after ``parent`` with node ids ``<prefix>0``, ``<prefix>1``, ..."""
    links: list[LinkRecord] = []
    head, depth = (parent.node_id, parent.depth + 1) if parent else (None, 0)
    for i, message in enumerate(messages):
        link = LinkRecord(
            node_id=f"{prefix}{i}", parent_node_id=head, message_id=message.id, depth=depth + i
        )
        links.append(link)
        head = link.node_id
    return links


def _chain_messages(store: Store, head: str) -> list[Message]:
    return [message for _, message in store.load_chain(head)]


def _every_kind_of_message() -> list[Message]:
    call = ToolCall(name="add", arguments={"a": 2, "b": [1, {"c": None}]}, id="call_1")
    return [
        SystemMessage(content="be brief", metadata={"source": "test"}),
        UserMessage(content="what is 2 + 3? 二加三", name="ada"),
        AssistantMessage(content=None, tool_calls=(call,)),
        ToolMessage(content="5", tool_call_id="call_1", name="add"),
        ToolMessage(content="Error: boom", tool_call_id="call_2", name="add", is_error=True),
        AssistantMessage(content="2 + 3 = 5"),
    ]


# -- sessions -----------------------------------------------------------------------------


def check_create_and_get_session(store: Store) -> None:
    """A created session reads back field for field; an unknown id reads as ``None``."""
    record = _session(
        parent_id="parent",
        turn_index=3,
        current_slot_id="side",
        last_summary_turn=2,
        spend={"m": ModelSpend(usage=Usage(prompt_tokens=10, completion_tokens=5, requests=1))},
        metadata={"tags": ["a", "b"], "nested": {"n": 1.5, "ok": True, "none": None}},
    )
    store.create_session(record)
    _expect_equal(store.get_session("s1"), record, "get_session after create_session")
    _expect_equal(store.get_session("nope"), None, "get_session of an unknown id")


def check_duplicate_session_conflicts(store: Store) -> None:
    """Creating a session whose id exists raises ``ConflictError`` and keeps the first."""
    first = _session(agent_name="first")
    store.create_session(first)
    _expect_raises(
        ConflictError, "create_session with a taken id", store.create_session, _session()
    )
    _expect_equal(store.get_session("s1"), first, "the first session after a conflict")
    _expect_equal(len(store.list_sessions()), 1, "sessions after a conflict")


def check_list_sessions_oldest_first(store: Store) -> None:
    """``list_sessions`` returns every session, oldest ``created_at`` first."""
    for offset, sid in [(2, "c"), (0, "b"), (1, "a")]:
        store.create_session(_session(sid, created_at=_T0 + timedelta(seconds=offset)))
    _expect_equal(
        [r.session_id for r in store.list_sessions()], ["b", "a", "c"], "list_sessions order"
    )


def check_delete_session(store: Store) -> None:
    """Deleting a session removes its slots, chains and memory, leaves others alone, and says
    whether anything was there."""
    for sid in ("gone", "kept"):
        messages: list[Message] = [UserMessage(content=f"hi {sid}"), AssistantMessage(content="ok")]
        links = _links(messages, f"{sid}-")
        store.create_session(_session(sid))
        slot = SlotRecord(session_id=sid, slot_id="main", head_node_id=links[-1].node_id)
        store.commit(_session(sid), messages=messages, links=links, slots=[slot])
        store.memory_set(sid, "k", sid, {})
    _expect_equal(store.delete_session("gone"), True, "delete_session of an existing session")
    _expect_equal(store.get_session("gone"), None, "get_session after delete")
    _expect_equal(store.load_slots("gone"), [], "slots after delete")
    _expect_equal(store.memory_entries("gone"), [], "memory after delete")
    _expect_equal(store.load_chain("gone-1"), [], "message chains after delete")
    _expect_equal(store.delete_session("gone"), False, "delete_session a second time")
    _expect(store.get_session("kept") is not None, "another session survives a delete")
    _expect_equal(len(store.load_slots("kept")), 1, "another session's slots after a delete")
    _expect_equal(len(store.load_chain("kept-1")), 2, "another session's chain after a delete")
    _expect_equal(
        [e.value for e in store.memory_entries("kept")], ["kept"], "another session's memory"
    )


def check_delete_keeps_shared_messages(store: Store) -> None:
    """A message is stored once even across sessions, so deleting the session that stored it
    first must not break another session's chain that links to it."""
    shared: list[Message] = [UserMessage(content="shared"), AssistantMessage(content="both")]
    for sid in ("first", "second"):
        store.create_session(_session(sid))
        store.commit(_session(sid), messages=shared, links=_links(shared, f"{sid}-"))
    store.delete_session("first")
    _expect_equal(
        _chain_messages(store, "second-1"), shared, "a chain sharing a deleted session's messages"
    )


# -- commits, messages and chains -----------------------------------------------------------


def check_commit_updates_session(store: Store) -> None:
    """A commit replaces the session's scalar state and keeps its ``created_at``."""
    store.create_session(_session())
    later = _T0 + timedelta(minutes=5)
    spend = {"gpt-x": ModelSpend(usage=Usage(prompt_tokens=7, completion_tokens=3), cost=0.25)}
    updated = _session(
        updated_at=later, turn_index=4, current_slot_id="b", last_summary_turn=3, spend=spend
    )
    store.commit(updated)
    got = store.get_session("s1")
    _expect_equal(got, updated, "session after commit")
    _expect(got is not None and got.created_at == _T0, "created_at is kept across commits")
    _expect(got is not None and got.cost_usd == 0.25, "cost_usd sums the spend")


def check_commit_unknown_session(store: Store) -> None:
    """Committing to a session that does not exist raises and stores nothing."""
    message = UserMessage(content="orphan")
    _expect_raises(
        SessionNotFoundError,
        "commit to an unknown session",
        store.commit,
        _session("ghost"),
        messages=[message],
        links=_links([message], "g"),
        slots=[SlotRecord(session_id="ghost", slot_id="main", head_node_id="g0")],
    )
    _expect_equal(store.get_session("ghost"), None, "the unknown session after a failed commit")
    _expect_equal(store.load_slots("ghost"), [], "slots after a failed commit")
    _expect_equal(store.load_chain("g0"), [], "chain after a failed commit")


def check_chain_round_trip(store: Store) -> None:
    """Messages of every role come back equal, oldest first, with their links."""
    store.create_session(_session())
    messages = _every_kind_of_message()
    links = _links(messages, "n")
    store.commit(_session(), messages=messages, links=links)
    chain = store.load_chain(links[-1].node_id)
    _expect_equal([link for link, _ in chain], links, "links of the loaded chain")
    _expect_equal([m for _, m in chain], messages, "messages of the loaded chain")
    _expect_equal(
        _chain_messages(store, links[2].node_id), messages[:3], "a chain loaded from a mid node"
    )
    _expect_equal(store.load_chain("no-such-node"), [], "load_chain of an unknown node")


def check_fork_shares_prefix(store: Store) -> None:
    """Two chains forked from one node share its prefix; neither sees the other's tail."""
    store.create_session(_session())
    prefix: list[Message] = [UserMessage(content="q"), AssistantMessage(content="a")]
    prefix_links = _links(prefix, "p")
    left: list[Message] = [UserMessage(content="left")]
    right: list[Message] = [UserMessage(content="right"), AssistantMessage(content="r")]
    left_links = _links(left, "l", prefix_links[-1])
    right_links = _links(right, "r", prefix_links[-1])
    store.commit(_session(), messages=prefix, links=prefix_links)
    store.commit(_session(), messages=left + right, links=left_links + right_links)
    _expect_equal(_chain_messages(store, "l0"), prefix + left, "left branch")
    _expect_equal(_chain_messages(store, "r1"), prefix + right, "right branch")
    _expect_equal(
        [link.depth for link, _ in store.load_chain("r1")], [0, 1, 2, 3], "depths of a branch"
    )
    _expect_equal(_chain_messages(store, "p1"), prefix, "the shared prefix is unchanged")


def check_message_stored_once(store: Store) -> None:
    """A message id already stored is skipped: committing it again (even with other content)
    or linking it from a second chain keeps the first version."""
    store.create_session(_session())
    first = UserMessage(content="first version")
    store.commit(_session(), messages=[first], links=_links([first], "a"))
    again = first.model_copy(update={"content": "second version"})
    store.commit(_session(), messages=[again], links=_links([again], "b"))
    # A link may also point at a stored message without sending it again.
    store.commit(_session(), links=_links([first], "c"))
    for head in ("a0", "b0", "c0"):
        _expect_equal(_chain_messages(store, head), [first], f"the message behind node {head}")


def check_commit_is_atomic(store: Store) -> None:
    """A commit that fails midway (a link whose node id exists) raises ``StorageError`` and
    stores nothing of itself: not its messages, links, slots or session record."""
    store.create_session(_session())
    kept = UserMessage(content="kept")
    kept_links = _links([kept], "k")
    kept_slot = SlotRecord(session_id="s1", slot_id="main", head_node_id="k0", created_at=_T0)
    before = _session(turn_index=1)
    store.commit(before, messages=[kept], links=kept_links, slots=[kept_slot])

    leaked = UserMessage(content="must not be stored")
    fresh_links = _links([leaked], "fresh", kept_links[-1])
    duplicate = LinkRecord(node_id="k0", parent_node_id=None, message_id=leaked.id, depth=0)
    bad_slot = kept_slot.model_copy(update={"head_node_id": "fresh0", "mode": "focused"})
    new_slot = SlotRecord(session_id="s1", slot_id="other", created_at=_T0)
    _expect_raises(
        StorageError,
        "commit with a link whose node id exists",
        store.commit,
        _session(turn_index=2),
        messages=[leaked],
        links=[*fresh_links, duplicate],
        slots=[bad_slot, new_slot],
    )
    _expect_equal(store.get_session("s1"), before, "session after a failed commit")
    _expect_equal(store.load_slots("s1"), [kept_slot], "slots after a failed commit")
    _expect_equal(store.load_chain("fresh0"), [], "links of a failed commit")
    _expect_equal(_chain_messages(store, "k0"), [kept], "the chain a failed commit collided with")
    # Had the failed commit stored its message, this later version would be skipped.
    retry = leaked.model_copy(update={"content": "stored later"})
    store.commit(_session(turn_index=2), messages=[retry], links=fresh_links)
    _expect_equal(_chain_messages(store, "fresh0"), [kept, retry], "messages of a failed commit")


# -- slots ----------------------------------------------------------------------------------


def check_slots_upsert(store: Store) -> None:
    """Slots are upserted by id, kept per session, and listed in creation order."""
    store.create_session(_session())
    store.create_session(_session("s2"))
    main = SlotRecord(session_id="s1", slot_id="main", created_at=_T0, updated_at=_T0)
    side = SlotRecord(
        session_id="s1",
        slot_id="side",
        parent_slot_id="main",
        fork_point=2,
        merge_base=2,
        created_at=_T0 + timedelta(seconds=1),
        updated_at=_T0 + timedelta(seconds=1),
    )
    store.commit(_session(), slots=[side, main])
    store.commit(_session("s2"), slots=[main.model_copy(update={"session_id": "s2"})])
    _expect_equal(store.load_slots("s1"), [main, side], "slots in creation order")
    changed = side.model_copy(
        update={
            "mode": "focused",
            "head_node_id": "n9",
            "summary_override": "so far: 5",
            "pinned_ids": ["m1", "m2"],
            "recent_window": 4,
            "merge_base": 5,
            "updated_at": _T0 + timedelta(minutes=1),
        }
    )
    store.commit(_session(), slots=[changed])
    _expect_equal(store.load_slots("s1"), [main, changed], "slots after an upsert")
    _expect_equal(len(store.load_slots("s2")), 1, "another session's slots")
    _expect_equal(store.load_slots("nobody"), [], "slots of an unknown session")


# -- memory ---------------------------------------------------------------------------------


def check_memory_set_get_delete(store: Store) -> None:
    """Set returns the stored entry; entries are listed by key; delete says if one existed."""
    store.create_session(_session())
    entry = store.memory_set("s1", "b", "two", {"source": "user"})
    _expect_equal(
        (entry.key, entry.value, entry.metadata), ("b", "two", {"source": "user"}), "memory_set"
    )
    store.memory_set("s1", "a", 1, {})
    _expect_equal(
        [(e.key, e.value) for e in store.memory_entries("s1")],
        [("a", 1), ("b", "two")],
        "memory entries by key",
    )
    _expect_equal(store.memory_entries("s1")[1], entry, "a listed entry equals the returned one")
    _expect_equal(store.memory_delete("s1", "a"), True, "memory_delete of a set key")
    _expect_equal(store.memory_delete("s1", "a"), False, "memory_delete a second time")
    _expect_equal(store.memory_delete("s1", "never"), False, "memory_delete of an unknown key")
    _expect_equal([e.key for e in store.memory_entries("s1")], ["b"], "memory after delete")
    store.create_session(_session("s2"))
    _expect_equal(store.memory_entries("s2"), [], "memory is per session")


def check_memory_versions(store: Store) -> None:
    """Each write (set or delete) is a new version; ``at_version`` shows memory as it was."""
    store.create_session(_session())
    _expect_equal(store.memory_version("s1"), 0, "memory_version before any write")
    _expect_equal(store.memory_set("s1", "x", 1, {}).version, 1, "version of the first write")
    store.memory_set("s1", "y", "why", {})
    store.memory_set("s1", "x", 2, {})
    store.memory_delete("s1", "y")
    _expect_equal(store.memory_version("s1"), 4, "memory_version after four writes")
    store.memory_delete("s1", "y")  # nothing to delete: not a write
    _expect_equal(store.memory_version("s1"), 4, "memory_version after a no-op delete")

    def values(version: int | None) -> dict[str, JsonValue]:
        return {e.key: e.value for e in store.memory_entries("s1", at_version=version)}

    _expect_equal(values(0), {}, "memory at version 0")
    _expect_equal(values(1), {"x": 1}, "memory at version 1")
    _expect_equal(values(2), {"x": 1, "y": "why"}, "memory at version 2")
    _expect_equal(values(3), {"x": 2, "y": "why"}, "memory at version 3")
    _expect_equal(values(4), {"x": 2}, "memory at version 4")
    _expect_equal(values(None), {"x": 2}, "memory now")


def check_memory_json_values(store: Store) -> None:
    """Any JSON value round-trips with its type: str, int, float, bool, null, list, object."""
    store.create_session(_session())
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
    _expect_equal(got, values, "memory values")
    for key, value in values.items():
        _expect(type(got[key]) is type(value), f"memory value {key!r} keeps type {type(value)}")
    inner = got["list"]
    _expect(
        isinstance(inner, list) and type(inner[2]) is float and inner[4] == [True],
        "types inside a list are kept",
    )


def check_memory_rejects_non_json(store: Store) -> None:
    """A value or metadata that is not JSON (NaN and Infinity included) raises
    ``InvalidInputError`` and stores nothing."""
    store.create_session(_session())
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
        _expect_raises(
            InvalidInputError,
            f"memory_set of {value!r}",
            store.memory_set,
            "s1",
            "k",
            value,
            metadata,
        )
    _expect_equal(store.memory_version("s1"), 1, "memory_version after rejected writes")
    _expect_equal(
        [(e.key, e.value) for e in store.memory_entries("s1")],
        [("k", "before")],
        "memory after rejected writes",
    )


def check_memory_keeps_created_at(store: Store) -> None:
    """Updating an entry keeps its first ``created_at`` and moves ``updated_at``."""
    store.create_session(_session())
    first = store.memory_set("s1", "k", 1, {"n": 1})
    second = store.memory_set("s1", "k", 2, {"n": 2})
    _expect_equal(second.created_at, first.created_at, "created_at after an update")
    _expect(second.updated_at >= first.updated_at, "updated_at does not go back")
    _expect(second.version > first.version, "an update gets a newer version")
    (listed,) = store.memory_entries("s1")
    _expect_equal(listed, second, "the listed entry after an update")
    _expect(first.created_at.tzinfo is not None, "created_at is timezone-aware")


CONFORMANCE_CHECKS: dict[str, Check] = {
    check.__name__.removeprefix("check_"): check
    for check in [
        check_create_and_get_session,
        check_duplicate_session_conflicts,
        check_list_sessions_oldest_first,
        check_delete_session,
        check_delete_keeps_shared_messages,
        check_commit_updates_session,
        check_commit_unknown_session,
        check_chain_round_trip,
        check_fork_shares_prefix,
        check_message_stored_once,
        check_commit_is_atomic,
        check_slots_upsert,
        check_memory_set_get_delete,
        check_memory_versions,
        check_memory_json_values,
        check_memory_rejects_non_json,
        check_memory_keeps_created_at,
    ]
}
"""Every check by name, in the order they run."""


def _run_check(make_store: StoreFactory, check: Check) -> None:
    store = make_store()
    try:
        check(store)
    finally:
        store.close()


def run_store_conformance(make_store: StoreFactory, *, only: Iterable[str] | None = None) -> None:
    """Run the conformance checks, each on a fresh store from ``make_store``.

    Args:
        make_store: Returns a new, empty store each time it is called.
        only: Names from :data:`CONFORMANCE_CHECKS` to run; all of them by default.

    Raises:
        ConformanceFailure: Some checks failed; the message names each and why.
        KeyError: ``only`` names an unknown check.
    """
    names = list(CONFORMANCE_CHECKS) if only is None else list(only)
    failures: list[str] = []
    for name in names:
        try:
            _run_check(make_store, CONFORMANCE_CHECKS[name])
        except AssertionError as exc:
            failures.append(f"{name}: {exc}")
    if failures:
        raise ConformanceFailure(
            f"{len(failures)} of {len(names)} store conformance checks failed:\n"
            + "\n".join(failures)
        )


class StoreConformance:
    """Base class for a pytest suite: one test per conformance check.

    Example:
        >>> from agcore_lab.store.sqlite import SqliteStore
        >>> class TestMyStore(StoreConformance):
        ...     def make_store(self) -> Store:
        ...         return SqliteStore(":memory:")

    Override :meth:`make_store`; it is called once per test and the store closed after.
    """

    def make_store(self) -> Store:
        """Return a new, empty store of the backend under test."""
        raise NotImplementedError("override make_store() to return a new, empty store")

    def _check(self, check: Check) -> None:
        _run_check(self.make_store, check)

    def test_create_and_get_session(self) -> None:
        self._check(check_create_and_get_session)

    def test_duplicate_session_conflicts(self) -> None:
        self._check(check_duplicate_session_conflicts)

    def test_list_sessions_oldest_first(self) -> None:
        self._check(check_list_sessions_oldest_first)

    def test_delete_session(self) -> None:
        self._check(check_delete_session)

    def test_delete_keeps_shared_messages(self) -> None:
        self._check(check_delete_keeps_shared_messages)

    def test_commit_updates_session(self) -> None:
        self._check(check_commit_updates_session)

    def test_commit_unknown_session(self) -> None:
        self._check(check_commit_unknown_session)

    def test_chain_round_trip(self) -> None:
        self._check(check_chain_round_trip)

    def test_fork_shares_prefix(self) -> None:
        self._check(check_fork_shares_prefix)

    def test_message_stored_once(self) -> None:
        self._check(check_message_stored_once)

    def test_commit_is_atomic(self) -> None:
        self._check(check_commit_is_atomic)

    def test_slots_upsert(self) -> None:
        self._check(check_slots_upsert)

    def test_memory_set_get_delete(self) -> None:
        self._check(check_memory_set_get_delete)

    def test_memory_versions(self) -> None:
        self._check(check_memory_versions)

    def test_memory_json_values(self) -> None:
        self._check(check_memory_json_values)

    def test_memory_rejects_non_json(self) -> None:
        self._check(check_memory_rejects_non_json)

    def test_memory_keeps_created_at(self) -> None:
        self._check(check_memory_keeps_created_at)
