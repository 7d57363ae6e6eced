"""Conformance checks for listings: checkpoint pages and a session's children.

Part of :data:`agcore_lab.testing.store_conformance.CONFORMANCE_CHECKS`; each is a plain
function of one fresh, empty store and uses only the ``Store`` protocol.
"""

from __future__ import annotations

from datetime import timedelta

from agcore_lab.errors import InvalidInputError
from agcore_lab.ids import new_id
from agcore_lab.llm.usage import ModelSpend, Usage
from agcore_lab.store.base import CkptMeta, SlotRecord, Store
from agcore_lab.testing._support import T0, expect_equal, expect_raises, session_record

__all__ = ["check_checkpoint_pages", "check_child_ids"]


def _ckpts(store: Store, session_id: str, turns: list[int]) -> list[str]:
    ids = []
    for n, turn in enumerate(turns):
        meta = CkptMeta(
            ckpt_id=new_id("ckpt"),
            session_id=session_id,
            turn_index=turn,
            created_at=T0 + timedelta(seconds=n),
            agent_name="agent",
            label=f"#{n}" if n % 2 else None,
            slots={"main": SlotRecord(session_id=session_id, slot_id="main", head_node_id=None)},
            spend={"m": ModelSpend(usage=Usage(prompt_tokens=n, requests=1), cost=0.5 * n)},
        )
        store.put_checkpoint(meta)
        ids.append(meta.ckpt_id)
    return ids


def _fields(ckpt: CkptMeta) -> dict[str, object]:
    # A checkpoint keeps each slot's settings, not when the slot was last touched.
    return ckpt.model_dump(exclude={"slots": {"__all__": {"updated_at"}}})


def check_checkpoint_pages(store: Store) -> None:
    """``list_checkpoints`` pages newest first: ``limit`` caps it, ``before`` a checkpoint id
    keeps the older ones, ``before`` a turn index the earlier turns; pages put together are
    the full listing; a bad ``limit`` or ``before`` is an ``InvalidInputError``."""
    store.create_session(session_record("s1"))
    store.create_session(session_record("s2"))
    # Turns as a rollback leaves them: the timeline goes back to turn 1, then on.
    ids = _ckpts(store, "s1", [0, 1, 2, 3, 1, 2])
    _ckpts(store, "s2", [0, 1])
    newest_first = list(reversed(ids))
    listed = store.list_checkpoints("s1")
    expect_equal([c.ckpt_id for c in listed], newest_first, "the full listing")
    expect_equal(
        [c.ckpt_id for c in store.list_checkpoints("s1", limit=2)], newest_first[:2], "limit=2"
    )
    pages, cursor = [], None
    while True:
        page = store.list_checkpoints("s1", limit=4, before=cursor)
        if not page:
            break
        pages.append([c.ckpt_id for c in page])
        cursor = page[-1].ckpt_id
    expect_equal(pages, [newest_first[:4], newest_first[4:]], "pages of 4 by checkpoint id")
    expect_equal(
        [_fields(c) for c in store.list_checkpoints("s1", before=ids[3])],
        [_fields(c) for c in listed if c.ckpt_id < ids[3]],
        "before= a checkpoint id: the records of the older ones, field for field",
    )
    expect_equal(
        [c.turn_index for c in store.list_checkpoints("s1", before=2)],
        [1, 1, 0],
        "before= a turn index: the checkpoints of earlier turns, newest first",
    )
    expect_equal(store.list_checkpoints("s1", before=newest_first[-1]), [], "before the oldest")
    expect_equal(len(store.list_checkpoints(None, before=2)), 5, "every session, before turn 2")
    for bad in ({"limit": 0}, {"limit": "3"}, {"before": 2.5}, {"before": True}):
        expect_raises(
            InvalidInputError,
            f"list_checkpoints(**{bad})",
            store.list_checkpoints,
            "s1",
            **bad,
        )


def check_child_ids(store: Store) -> None:
    """``child_ids`` names a session's children oldest first, and only its own."""
    store.create_session(session_record("root"))
    store.create_session(session_record("other"))
    for n, name in enumerate(["c3", "c1", "c2"]):
        store.create_session(
            session_record(name, parent_id="root", created_at=T0 + timedelta(seconds=n))
        )
    store.create_session(session_record("g1", parent_id="c1"))
    store.create_session(session_record("o1", parent_id="other"))
    expect_equal(store.child_ids("root"), ["c3", "c1", "c2"], "children, oldest first")
    expect_equal(store.child_ids("c1"), ["g1"], "a child's own children")
    expect_equal(store.child_ids("c2"), [], "a session without children")
    expect_equal(store.child_ids("nobody"), [], "an unknown session")
    store.delete_session("root")
    expect_equal(store.child_ids("root"), ["c3", "c1", "c2"], "orphans still name their parent")
