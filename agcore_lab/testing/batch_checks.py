"""Conformance checks for sessions created many at a time (``Store.create_sessions``).

Part of :data:`agcore_lab.testing.store_conformance.CONFORMANCE_CHECKS`; each is a plain
function of one fresh, empty store.
"""

from __future__ import annotations

from agcore_lab.errors import ConflictError, SessionBusyError
from agcore_lab.ids import new_id
from agcore_lab.store.base import CkptMeta, SlotRecord, Store
from agcore_lab.store.roles.sessions import NewSession
from agcore_lab.testing._support import T0, expect, expect_equal, expect_raises, session_record

__all__ = [
    "check_create_sessions",
    "check_create_sessions_reserves_leases",
]


def _new(session_id: str, parent_id: str | None = "root") -> NewSession:
    start = CkptMeta(
        ckpt_id=new_id("ckpt"),
        session_id=session_id,
        turn_index=0,
        created_at=T0,
        agent_name="agent",
        label="start",
    )
    slot = SlotRecord(session_id=session_id, slot_id="main", created_at=T0)
    return NewSession(session_record(session_id, parent_id=parent_id), [slot], start)


def check_create_sessions(store: Store) -> None:
    """Many sessions go in as ``create_session`` would put each (record, first slots, first
    checkpoint, a ``created`` and a ``checkpoint`` change); an id that is taken or given twice
    refuses the whole batch with ``ConflictError`` and writes none of it."""
    store.create_session(session_record("root"))
    seq = store.latest_change()
    batch = [_new(f"c{i}") for i in range(3)]
    store.create_sessions(batch)
    for new in batch:
        sid = new.record.session_id
        expect_equal(store.get_session(sid), new.record, f"{sid} after create_sessions")
        expect_equal(store.session_version(sid), 0, f"the version of {sid}")
        expect_equal([s.slot_id for s in store.load_slots(sid)], ["main"], f"{sid}'s slots")
        (start,) = store.list_checkpoints(sid)
        assert new.checkpoint is not None
        expect_equal(start.ckpt_id, new.checkpoint.ckpt_id, f"{sid}'s first checkpoint")
        expect_equal(start.label, "start", f"the label of {sid}'s first checkpoint")
    expect_equal(store.child_ids("root"), ["c0", "c1", "c2"], "the new children of root")
    changes = [(c.session_id, c.kind) for c in store.changes_since(seq)]
    expect_equal(
        changes,
        [(f"c{i}", kind) for i in range(3) for kind in ("created", "checkpoint")],
        "the change feed after create_sessions",
    )
    seq = store.latest_change()
    expect_raises(
        ConflictError,
        "a batch with a taken id",
        store.create_sessions,
        [_new("c3"), _new("c1")],
    )
    expect_raises(
        ConflictError, "a batch with an id twice", store.create_sessions, [_new("c4"), _new("c4")]
    )
    expect_equal(store.get_session("c3"), None, "a session of a refused batch")
    expect_equal(store.get_session("c4"), None, "a session of a batch with an id twice")
    expect_equal(store.changes_since(seq), [], "the change feed after refused batches")
    store.create_sessions([])  # nothing to write: no write, no error
    expect_equal(len(store.list_sessions()), 4, "sessions after an empty batch")


def check_create_sessions_reserves_leases(store: Store) -> None:
    """With ``lease_holder``, every new session's turn lease is taken in the same write: other
    holders and holder-less writes are refused, the holder writes and releases it."""
    store.create_sessions([_new("a", None), _new("b", None)], lease_holder="H", ttl=30)
    for sid in ("a", "b"):
        expect_raises(
            SessionBusyError, f"another holder on {sid}", store.acquire_lease, sid, "X", ttl=30
        )
        expect_raises(
            SessionBusyError,
            f"a write without the lease on {sid}",
            store.commit,
            session_record(sid, parent_id=None),
        )
    expect_equal(store.acquire_lease("a", "H", ttl=30), 0, "the holder renews its lease")
    version = store.commit(
        session_record("a", parent_id=None, turn_index=1), lease_holder="H", release_lease=True
    )
    expect_equal(version, 1, "the holder's commit")
    expect_equal(store.acquire_lease("a", "X", ttl=30), 1, "taken by another after release")
    store.release_lease("b", "H")
    expect(store.renew_lease("b", "H", ttl=30) is False, "a released lease is not renewed")
