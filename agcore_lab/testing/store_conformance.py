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
from datetime import timedelta

from agcore_lab.errors import (
    ConflictError,
    SessionNotFoundError,
    StaleSessionError,
    StorageError,
)
from agcore_lab.llm.messages import (
    AssistantMessage,
    Message,
    UserMessage,
)
from agcore_lab.llm.usage import ModelSpend, Usage
from agcore_lab.store.base import LinkRecord, SlotRecord, Store
from agcore_lab.testing._support import (
    T0,
    chain_links,
    chain_messages,
    every_kind_of_message,
    expect,
    expect_equal,
    expect_raises,
    run_checks,
    session_record,
)
from agcore_lab.testing.async_checks import (
    check_async_adapter_forwards_every_method,
    check_async_protocol_mirrors_store,
    check_async_round_trip,
)
from agcore_lab.testing.batch_checks import (
    check_create_sessions,
    check_create_sessions_reserves_leases,
)
from agcore_lab.testing.call_checks import (
    check_call_parts_outlive_failed_writes_and_cleanups,
    check_calls_follow_checkpoints,
    check_calls_round_trip,
    check_calls_written_on_their_own,
    check_unhashed_calls_read_back_with_their_hash,
)
from agcore_lab.testing.chain_checks import (
    check_chain_history,
    check_chain_read_back,
    check_chain_tail,
)
from agcore_lab.testing.checkpoint_checks import (
    check_checkpoint_round_trip,
    check_checkpoints_newest_first_and_delete,
    check_pending_compare_and_set,
    check_pending_expiry_on_list,
    check_restore_checkpoint,
)
from agcore_lab.testing.listing_checks import check_checkpoint_pages, check_child_ids
from agcore_lab.testing.memory_checks import (
    check_commit_memory_if_unset,
    check_memory_json_values,
    check_memory_keeps_created_at,
    check_memory_rejects_non_json,
    check_memory_set_get_delete,
    check_memory_versions,
)
from agcore_lab.testing.version_checks import (
    check_change_feed,
    check_commit_carries_checkpoint_and_memory,
    check_stale_commit_writes_nothing,
    check_turn_lease,
    check_versions_count_writes,
)

__all__ = [
    "CONFORMANCE_CHECKS",
    "ConformanceFailure",
    "StoreConformance",
    "StoreFactory",
    "run_store_conformance",
]

StoreFactory = Callable[[], Store]
Check = Callable[[Store], None]


class ConformanceFailure(AssertionError):
    """One or more conformance checks failed; the message lists each with its reason."""


# -- sessions -----------------------------------------------------------------------------


def check_create_and_get_session(store: Store) -> None:
    """A created session reads back field for field; an unknown id reads as ``None``."""
    record = session_record(
        parent_id="parent",
        turn_index=3,
        current_slot_id="side",
        last_summary_turn=2,
        spend={"m": ModelSpend(usage=Usage(prompt_tokens=10, completion_tokens=5, requests=1))},
        metadata={"tags": ["a", "b"], "nested": {"n": 1.5, "ok": True, "none": None}},
    )
    store.create_session(record)
    expect_equal(store.get_session("s1"), record, "get_session after create_session")
    expect_equal(store.get_session("nope"), None, "get_session of an unknown id")


def check_duplicate_session_conflicts(store: Store) -> None:
    """Creating a session whose id exists raises ``ConflictError`` and keeps the first."""
    first = session_record(agent_name="first")
    store.create_session(first)
    expect_raises(
        ConflictError, "create_session with a taken id", store.create_session, session_record()
    )
    expect_equal(store.get_session("s1"), first, "the first session after a conflict")
    expect_equal(len(store.list_sessions()), 1, "sessions after a conflict")


def check_list_sessions_oldest_first(store: Store) -> None:
    """``list_sessions`` returns every session, oldest ``created_at`` first."""
    for offset, sid in [(2, "c"), (0, "b"), (1, "a")]:
        store.create_session(session_record(sid, created_at=T0 + timedelta(seconds=offset)))
    expect_equal(
        [r.session_id for r in store.list_sessions()], ["b", "a", "c"], "list_sessions order"
    )


def check_delete_session(store: Store) -> None:
    """Deleting a session removes its slots, chains and memory, leaves others alone, and says
    whether anything was there."""
    for sid in ("gone", "kept"):
        messages: list[Message] = [UserMessage(content=f"hi {sid}"), AssistantMessage(content="ok")]
        links = chain_links(messages, f"{sid}-")
        store.create_session(session_record(sid))
        slot = SlotRecord(session_id=sid, slot_id="main", head_node_id=links[-1].node_id)
        store.commit(session_record(sid), messages=messages, links=links, slots=[slot])
        store.memory_set(sid, "k", sid, {})
    expect_raises(
        StaleSessionError,
        "delete_session at an old version",
        store.delete_session,
        "gone",
        expected_version=0,
    )
    expect_equal(store.delete_session("gone"), True, "delete_session of an existing session")
    expect_equal(store.get_session("gone"), None, "get_session after delete")
    expect_equal(store.load_slots("gone"), [], "slots after delete")
    expect_equal(store.memory_entries("gone"), [], "memory after delete")
    expect_equal(store.load_chain("gone-1"), [], "message chains after delete")
    expect_equal(store.delete_session("gone"), False, "delete_session a second time")
    expect(store.get_session("kept") is not None, "another session survives a delete")
    expect_equal(len(store.load_slots("kept")), 1, "another session's slots after a delete")
    expect_equal(len(store.load_chain("kept-1")), 2, "another session's chain after a delete")
    expect_equal(
        [e.value for e in store.memory_entries("kept")], ["kept"], "another session's memory"
    )


def check_delete_keeps_shared_messages(store: Store) -> None:
    """A message is stored once even across sessions, so deleting the session that stored it
    first must not break another session's chain that links to it."""
    shared: list[Message] = [UserMessage(content="shared"), AssistantMessage(content="both")]
    for sid in ("first", "second"):
        store.create_session(session_record(sid))
        store.commit(session_record(sid), messages=shared, links=chain_links(shared, f"{sid}-"))
    store.delete_session("first")
    expect_equal(
        chain_messages(store, "second-1"), shared, "a chain sharing a deleted session's messages"
    )


# -- commits, messages and chains -----------------------------------------------------------


def check_commit_updates_session(store: Store) -> None:
    """A commit replaces the session's scalar state and keeps its ``created_at``."""
    store.create_session(session_record())
    later = T0 + timedelta(minutes=5)
    spend = {"gpt-x": ModelSpend(usage=Usage(prompt_tokens=7, completion_tokens=3), cost=0.25)}
    updated = session_record(
        updated_at=later, turn_index=4, current_slot_id="b", last_summary_turn=3, spend=spend
    )
    expect_equal(store.commit(updated), 1, "the version a commit returns")
    got = store.get_session("s1")
    expect_equal(got, updated.model_copy(update={"version": 1}), "session after commit")
    expect(got is not None and got.created_at == T0, "created_at is kept across commits")
    expect(got is not None and got.cost_usd == 0.25, "cost_usd sums the spend")


def check_commit_unknown_session(store: Store) -> None:
    """Committing to a session that does not exist raises and stores nothing."""
    message = UserMessage(content="orphan")
    expect_raises(
        SessionNotFoundError,
        "commit to an unknown session",
        store.commit,
        session_record("ghost"),
        messages=[message],
        links=chain_links([message], "g"),
        slots=[SlotRecord(session_id="ghost", slot_id="main", head_node_id="g0")],
    )
    expect_equal(store.get_session("ghost"), None, "the unknown session after a failed commit")
    expect_equal(store.load_slots("ghost"), [], "slots after a failed commit")
    expect_equal(store.load_chain("g0"), [], "chain after a failed commit")


def check_chain_round_trip(store: Store) -> None:
    """Messages of every role come back equal, oldest first, with their links."""
    store.create_session(session_record())
    messages = every_kind_of_message()
    links = chain_links(messages, "n")
    store.commit(session_record(), messages=messages, links=links)
    chain = store.load_chain(links[-1].node_id)
    expect_equal([link for link, _ in chain], links, "links of the loaded chain")
    expect_equal([m for _, m in chain], messages, "messages of the loaded chain")
    expect_equal(
        chain_messages(store, links[2].node_id), messages[:3], "a chain loaded from a mid node"
    )
    expect_equal(store.load_chain("no-such-node"), [], "load_chain of an unknown node")


def check_fork_shares_prefix(store: Store) -> None:
    """Two chains forked from one node share its prefix; neither sees the other's tail."""
    store.create_session(session_record())
    prefix: list[Message] = [UserMessage(content="q"), AssistantMessage(content="a")]
    prefix_links = chain_links(prefix, "p")
    left: list[Message] = [UserMessage(content="left")]
    right: list[Message] = [UserMessage(content="right"), AssistantMessage(content="r")]
    left_links = chain_links(left, "l", prefix_links[-1])
    right_links = chain_links(right, "r", prefix_links[-1])
    store.commit(session_record(), messages=prefix, links=prefix_links)
    store.commit(session_record(version=1), messages=left + right, links=left_links + right_links)
    expect_equal(chain_messages(store, "l0"), prefix + left, "left branch")
    expect_equal(chain_messages(store, "r1"), prefix + right, "right branch")
    expect_equal(
        [link.depth for link, _ in store.load_chain("r1")], [0, 1, 2, 3], "depths of a branch"
    )
    expect_equal(chain_messages(store, "p1"), prefix, "the shared prefix is unchanged")


def check_message_stored_once(store: Store) -> None:
    """A message id already stored is skipped: committing it again (even with other content)
    or linking it from a second chain keeps the first version."""
    store.create_session(session_record())
    first = UserMessage(content="first version")
    store.commit(session_record(), messages=[first], links=chain_links([first], "a"))
    again = first.model_copy(update={"content": "second version"})
    store.commit(session_record(version=1), messages=[again], links=chain_links([again], "b"))
    # A link may also point at a stored message without sending it again.
    store.commit(session_record(version=2), links=chain_links([first], "c"))
    for head in ("a0", "b0", "c0"):
        expect_equal(chain_messages(store, head), [first], f"the message behind node {head}")


def check_commit_is_atomic(store: Store) -> None:
    """A commit that fails midway (a link whose node id exists) raises ``StorageError`` and
    stores nothing of itself: not its messages, links, slots or session record."""
    store.create_session(session_record())
    kept = UserMessage(content="kept")
    kept_links = chain_links([kept], "k")
    kept_slot = SlotRecord(session_id="s1", slot_id="main", head_node_id="k0", created_at=T0)
    store.commit(session_record(turn_index=1), messages=[kept], links=kept_links, slots=[kept_slot])
    before = session_record(turn_index=1, version=1)

    leaked = UserMessage(content="must not be stored")
    fresh_links = chain_links([leaked], "fresh", kept_links[-1])
    duplicate = LinkRecord(node_id="k0", parent_node_id=None, message_id=leaked.id, depth=0)
    bad_slot = kept_slot.model_copy(update={"head_node_id": "fresh0", "mode": "focused"})
    new_slot = SlotRecord(session_id="s1", slot_id="other", created_at=T0)
    expect_raises(
        StorageError,
        "commit with a link whose node id exists",
        store.commit,
        session_record(turn_index=2, version=1),
        messages=[leaked],
        links=[*fresh_links, duplicate],
        slots=[bad_slot, new_slot],
    )
    expect_equal(store.get_session("s1"), before, "session after a failed commit")
    expect_equal(store.load_slots("s1"), [kept_slot], "slots after a failed commit")
    expect_equal(store.load_chain("fresh0"), [], "links of a failed commit")
    expect_equal(chain_messages(store, "k0"), [kept], "the chain a failed commit collided with")
    # Had the failed commit stored its message, this later version would be skipped.
    retry = leaked.model_copy(update={"content": "stored later"})
    store.commit(session_record(turn_index=2, version=1), messages=[retry], links=fresh_links)
    expect_equal(chain_messages(store, "fresh0"), [kept, retry], "messages of a failed commit")


# -- slots ----------------------------------------------------------------------------------


def check_slots_upsert(store: Store) -> None:
    """Slots are upserted by id, kept per session, and listed in creation order."""
    store.create_session(session_record())
    store.create_session(session_record("s2"))
    main = SlotRecord(session_id="s1", slot_id="main", created_at=T0, updated_at=T0)
    side = SlotRecord(
        session_id="s1",
        slot_id="side",
        parent_slot_id="main",
        fork_point=2,
        merge_base=2,
        created_at=T0 + timedelta(seconds=1),
        updated_at=T0 + timedelta(seconds=1),
    )
    store.commit(session_record(), slots=[side, main])
    store.commit(session_record("s2"), slots=[main.model_copy(update={"session_id": "s2"})])
    expect_equal(store.load_slots("s1"), [main, side], "slots in creation order")
    changed = side.model_copy(
        update={
            "mode": "focused",
            "head_node_id": "n9",
            "summary_override": "so far: 5",
            "pinned_ids": ["m1", "m2"],
            "recent_window": 4,
            "merge_base": 5,
            "updated_at": T0 + timedelta(minutes=1),
        }
    )
    store.commit(session_record(version=1), slots=[changed])
    expect_equal(store.load_slots("s1"), [main, changed], "slots after an upsert")
    expect_equal(len(store.load_slots("s2")), 1, "another session's slots")
    expect_equal(store.load_slots("nobody"), [], "slots of an unknown session")


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
        check_chain_read_back,
        check_chain_tail,
        check_chain_history,
        check_calls_round_trip,
        check_calls_written_on_their_own,
        check_calls_follow_checkpoints,
        check_unhashed_calls_read_back_with_their_hash,
        check_call_parts_outlive_failed_writes_and_cleanups,
        check_fork_shares_prefix,
        check_message_stored_once,
        check_commit_is_atomic,
        check_slots_upsert,
        check_memory_set_get_delete,
        check_memory_versions,
        check_memory_json_values,
        check_memory_rejects_non_json,
        check_memory_keeps_created_at,
        check_commit_memory_if_unset,
        check_versions_count_writes,
        check_stale_commit_writes_nothing,
        check_turn_lease,
        check_change_feed,
        check_commit_carries_checkpoint_and_memory,
        check_checkpoint_round_trip,
        check_checkpoints_newest_first_and_delete,
        check_restore_checkpoint,
        check_pending_compare_and_set,
        check_pending_expiry_on_list,
        check_checkpoint_pages,
        check_child_ids,
        check_create_sessions,
        check_create_sessions_reserves_leases,
        check_async_protocol_mirrors_store,
        check_async_adapter_forwards_every_method,
        check_async_round_trip,
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
    run_checks(
        CONFORMANCE_CHECKS,
        make_store,
        _run_check,
        only=only,
        failure=ConformanceFailure,
        what="store",
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

    def __init_subclass__(cls, **kwargs: object) -> None:
        # One test method per check, generated: a new check needs no hand-written copy.
        super().__init_subclass__(**kwargs)
        for name, check in CONFORMANCE_CHECKS.items():
            setattr(cls, f"test_{name}", _test_method(check))


def _test_method(check: Check) -> Callable[[StoreConformance], None]:
    def test(self: StoreConformance) -> None:
        _run_check(self.make_store, check)

    test.__name__ = f"test_{check.__name__.removeprefix('check_')}"
    test.__doc__ = check.__doc__
    return test
