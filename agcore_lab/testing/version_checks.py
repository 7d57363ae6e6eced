"""Conformance checks for shared sessions: versions, turn leases and the change feed.

Part of :data:`agcore_lab.testing.store_conformance.CONFORMANCE_CHECKS`; each is a plain
function of one fresh, empty store.
"""

from __future__ import annotations

import time

from agcore_lab.errors import SessionBusyError, SessionNotFoundError, StaleSessionError
from agcore_lab.ids import new_id
from agcore_lab.llm.messages import Message, UserMessage
from agcore_lab.store.base import CkptMeta, SlotRecord, Store
from agcore_lab.testing._support import (
    T0,
    chain_links,
    chain_messages,
    expect,
    expect_equal,
    expect_raises,
    session_record,
)

__all__ = [
    "check_change_feed",
    "check_commit_carries_checkpoint_and_memory",
    "check_stale_commit_writes_nothing",
    "check_turn_lease",
    "check_versions_count_writes",
]


def check_versions_count_writes(store: Store) -> None:
    """A new session is at version 0; each commit returns and stores the next version; the
    version reads back through ``session_version`` and ``get_session``."""
    store.create_session(session_record())
    expect_equal(store.session_version("s1"), 0, "version of a new session")
    expect_equal(store.session_version("nobody"), None, "version of an unknown session")
    for version in range(3):
        got = store.commit(session_record(turn_index=version + 1, version=version))
        expect_equal(got, version + 1, "the version a commit returns")
    record = store.get_session("s1")
    expect(record is not None and record.version == 3, "get_session carries the version")
    expect_equal(store.session_version("s1"), 3, "session_version after three commits")


def check_stale_commit_writes_nothing(store: Store) -> None:
    """A commit based on an older version raises ``StaleSessionError`` (naming both versions)
    and stores nothing of itself: not its messages, links, slots or record."""
    store.create_session(session_record())
    store.commit(session_record(turn_index=1))  # another writer moved it to version 1
    lost: list[Message] = [UserMessage(content="based on version 0")]
    links = chain_links(lost, "x")
    slot = SlotRecord(session_id="s1", slot_id="side", head_node_id="x0")
    try:
        store.commit(session_record(turn_index=9), messages=lost, links=links, slots=[slot])
    except StaleSessionError as exc:
        expect_equal(
            (exc.context["expected_version"], exc.context["stored_version"]),
            (0, 1),
            "the versions a stale commit names",
        )
    else:
        raise AssertionError("a commit based on an old version was accepted")
    record = store.get_session("s1")
    expect(record is not None and record.turn_index == 1, "the record after a stale commit")
    expect_equal(store.load_slots("s1"), [], "slots after a stale commit")
    expect_equal(store.load_chain("x0"), [], "links after a stale commit")
    # Had the stale commit stored its message, this later version of it would be skipped.
    again = lost[0].model_copy(update={"content": "stored later"})
    store.commit(session_record(version=1), messages=[again], links=links)
    expect_equal(chain_messages(store, "x0"), [again], "no orphan message of a stale commit")
    expect_raises(
        SessionNotFoundError, "a commit to a deleted session", store.commit, session_record("x")
    )


def check_turn_lease(store: Store) -> None:
    """One holder at a time: a second holder, and any holder-less write, get
    ``SessionBusyError`` while the lease is live; the holder writes; after release (or expiry)
    another holder takes it."""
    store.create_session(session_record())
    expect_equal(store.acquire_lease("s1", "A", ttl=30), 0, "acquire returns the version")
    expect_raises(SessionBusyError, "a second holder", store.acquire_lease, "s1", "B", ttl=30)
    expect_raises(SessionBusyError, "a write without the lease", store.commit, session_record())
    expect_equal(store.commit(session_record(), lease_holder="A"), 1, "the holder's write")
    expect(store.renew_lease("s1", "A", ttl=30), "the holder renews")
    expect(not store.renew_lease("s1", "B", ttl=30), "a non-holder cannot renew")
    store.release_lease("s1", "A")
    expect_equal(store.acquire_lease("s1", "B", ttl=0.2), 1, "taken after a release")
    time.sleep(0.3)
    expect_equal(store.acquire_lease("s1", "C", ttl=30), 1, "taken after an expiry")
    expect_raises(
        SessionNotFoundError, "a lease on an unknown session", store.acquire_lease, "x", "A", ttl=1
    )


def check_change_feed(store: Store) -> None:
    """Creates, commits and deletes appear in the change feed in order, named by session and
    kind and carrying this store's origin."""
    start = store.latest_change()
    store.create_session(session_record())
    store.commit(session_record(), change="turn")
    store.delete_session("s1")
    changes = store.changes_since(start)
    expect_equal(
        [(c.session_id, c.kind) for c in changes],
        [("s1", "created"), ("s1", "turn"), ("s1", "destroyed")],
        "the change feed",
    )
    expect({c.origin for c in changes} == {store.origin}, "changes carry the store's origin")
    expect_equal(store.latest_change(), changes[-1].seq, "latest_change is the newest seq")
    expect_equal(store.changes_since(changes[-1].seq), [], "nothing after the newest")


def _checkpoint(turn_index: int) -> CkptMeta:
    return CkptMeta(
        ckpt_id=new_id("ckpt"),
        session_id="s1",
        turn_index=turn_index,
        created_at=T0,
        agent_name="agent",
    )


def check_commit_carries_checkpoint_and_memory(store: Store) -> None:
    """A commit may store a checkpoint (its parent: the session's latest checkpoint, read in
    the commit) and memory writes with the turn; a stale commit stores none of them."""
    start = _checkpoint(0)
    store.create_session(session_record(), checkpoint=start)
    store.commit(session_record(turn_index=1))  # another writer moved it to version 1
    seq = store.latest_change()
    lost = _checkpoint(1)
    expect_raises(
        StaleSessionError,
        "a stale commit with a checkpoint and memory",
        store.commit,
        session_record(turn_index=2),
        checkpoint=lost,
        memory=[("result_summary", "lost", {})],
    )
    expect_equal(store.get_checkpoint(lost.ckpt_id), None, "the checkpoint of a stale commit")
    expect_equal(store.memory_version("s1"), 0, "memory after a stale commit")
    expect_equal(store.changes_since(seq), [], "the change feed after a stale commit")
    after = _checkpoint(2)
    got = store.commit(
        session_record(turn_index=2, version=1),
        checkpoint=after,
        memory=[("result_summary", "done", {"written_by": "dispatch"})],
    )
    expect_equal(got, 2, "the version of a commit with a checkpoint")
    stored = store.get_checkpoint(after.ckpt_id)
    expect(stored is not None, "the checkpoint stored with the commit reads back")
    assert stored is not None
    expect_equal(stored.parent_ckpt_id, start.ckpt_id, "its parent: the latest checkpoint")
    expect_equal(stored.turn_index, 2, "its turn index")
    entries = [(e.key, e.value, e.metadata) for e in store.memory_entries("s1")]
    expect_equal(
        entries,
        [("result_summary", "done", {"written_by": "dispatch"})],
        "memory written with the commit",
    )
    expect_equal(
        [(c.kind, c.ckpt_id) for c in store.changes_since(seq)],
        [("turn", None), ("checkpoint", after.ckpt_id)],
        "the change feed of a commit with a checkpoint",
    )
