"""Conformance checks for checkpoints and pending tool calls (time travel and approvals).

Part of :data:`agcore_lab.testing.store_conformance.CONFORMANCE_CHECKS`; each is a plain
function of one fresh, empty store and uses only the ``Store`` protocol.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

from agcore_lab.errors import ConflictError, GoneError, NotFoundError, SessionNotFoundError
from agcore_lab.ids import new_id, utcnow
from agcore_lab.llm.messages import AssistantMessage, Message, UserMessage
from agcore_lab.llm.usage import ModelSpend, Usage
from agcore_lab.store.base import CkptMeta, SlotRecord, Store
from agcore_lab.store.pending import PendingToolCall
from agcore_lab.testing._support import (
    T0,
    chain_links,
    expect,
    expect_equal,
    expect_raises,
    session_record,
)

__all__ = [
    "check_checkpoint_round_trip",
    "check_checkpoints_newest_first_and_delete",
    "check_pending_compare_and_set",
    "check_pending_expiry_on_list",
    "check_restore_checkpoint",
]


def _ckpt(session_id: str = "s1", **changes: object) -> CkptMeta:
    fields: dict[str, object] = {
        "ckpt_id": new_id("ckpt"),
        "session_id": session_id,
        "turn_index": 0,
        "created_at": T0,
        "agent_name": "agent",
    }
    fields.update(changes)
    return CkptMeta.model_validate(fields)


def _pending(session_id: str = "s1", **changes: object) -> PendingToolCall:
    now = utcnow()
    fields: dict[str, object] = {
        "interrupt_id": new_id("int"),
        "session_id": session_id,
        "run_id": new_id("run"),
        "tool_call_id": "call_1",
        "tool_name": "transfer",
        "tool_args": {"to": "u2", "amount": 100},
        "created_at": now,
        "updated_at": now,
    }
    fields.update(changes)
    return PendingToolCall.model_validate(fields)


def _settings(ckpt: CkptMeta) -> dict[str, dict[str, object]]:
    # A checkpoint keeps each slot's head and settings, not when the slot was last touched.
    return {k: v.model_dump(exclude={"updated_at"}) for k, v in ckpt.slots.items()}


def check_checkpoint_round_trip(store: Store) -> None:
    """A checkpoint reads back field for field (slots with their heads and settings, spend, a
    pending call) by id and in the session's list; an unknown id reads as ``None``."""
    store.create_session(session_record())
    slots = {
        "main": SlotRecord(session_id="s1", slot_id="main", head_node_id="n3", created_at=T0),
        "side": SlotRecord(
            session_id="s1",
            slot_id="side",
            parent_slot_id="main",
            fork_point=2,
            mode="focused",
            summary_override="so far",
            pinned_ids=["m1"],
            recent_window=4,
            head_node_id="n5",
            created_at=T0,
        ),
    }
    spend = {
        "m": ModelSpend(usage=Usage(prompt_tokens=9, completion_tokens=4, requests=2), cost=0.5)
    }
    pending = _pending()
    ckpt = _ckpt(
        turn_index=3,
        label="a label",
        source="auto",
        message_count=6,
        prompt_tokens=9,
        completion_tokens=4,
        cost_usd=0.5,
        current_slot_id="side",
        last_summary_turn=2,
        memory_version=7,
        slots=slots,
        spend=spend,
        pending=pending,
    )
    store.put_checkpoint(ckpt)
    got = store.get_checkpoint(ckpt.ckpt_id)
    expect(got is not None, "get_checkpoint of a stored checkpoint")
    assert got is not None
    expect_equal(_settings(got), _settings(ckpt), "the checkpoint's slots")
    expect_equal(
        got.model_dump(exclude={"slots"}), ckpt.model_dump(exclude={"slots"}), "the checkpoint"
    )
    listed = store.list_checkpoints("s1")
    expect_equal(
        [(c.ckpt_id, _settings(c)) for c in listed],
        [(ckpt.ckpt_id, _settings(ckpt))],
        "list_checkpoints of the session",
    )
    expect_equal(store.get_checkpoint("ckpt_nope"), None, "get_checkpoint of an unknown id")
    expect_raises(
        SessionNotFoundError, "a checkpoint of an unknown session", store.put_checkpoint,
        _ckpt("ghost"),
    )  # fmt: skip


def check_checkpoints_newest_first_and_delete(store: Store) -> None:
    """Checkpoints list newest first (per session, or of all sessions), ``limit`` keeps the
    newest and ``latest_checkpoint_id`` names it; deleting some or all of a session's leaves
    the others' alone."""
    for sid in ("s1", "s2"):
        store.create_session(session_record(sid))
    made = [_ckpt("s1" if i % 2 == 0 else "s2", turn_index=i) for i in range(6)]
    for ckpt in made:
        store.put_checkpoint(ckpt)
    ids = [c.ckpt_id for c in made]
    expect_equal(
        [c.ckpt_id for c in store.list_checkpoints("s1")], ids[4::-2], "one session, newest first"
    )
    expect_equal([c.ckpt_id for c in store.list_checkpoints()], ids[::-1], "all, newest first")
    expect_equal(
        [c.ckpt_id for c in store.list_checkpoints("s2", limit=2)], [ids[5], ids[3]], "limit"
    )
    expect_equal(store.latest_checkpoint_id("s1"), ids[4], "latest_checkpoint_id")
    expect_equal(store.latest_checkpoint_id("s2"), ids[5], "latest_checkpoint_id of another")
    expect_equal(store.latest_checkpoint_id("ses_none"), None, "latest of an unknown session")
    expect_equal(store.delete_checkpoints("s1", [ids[0]]), 1, "deleting one")
    expect_equal(store.get_checkpoint(ids[0]), None, "a deleted checkpoint")
    expect_equal(store.delete_checkpoints("s1"), 2, "deleting the rest of a session's")
    expect_equal(store.latest_checkpoint_id("s1"), None, "latest of a session without any")
    expect_equal(len(store.list_checkpoints("s2")), 3, "another session's checkpoints")


def check_restore_checkpoint(store: Store) -> None:
    """Restoring gives the session exactly the checkpoint's record, slots and memory (as of
    its memory version), stores the marker, and bumps the version; a fork (``create=True``)
    makes a new session sharing the chains; a restore based on an old version writes nothing.
    """
    store.create_session(session_record())
    messages: list[Message] = [UserMessage(content="q"), AssistantMessage(content="a")]
    links = chain_links(messages, "n")
    main = SlotRecord(session_id="s1", slot_id="main", head_node_id="n1", created_at=T0)
    store.commit(session_record(turn_index=1), messages=messages, links=links, slots=[main])
    store.memory_set("s1", "k", "then", {})
    at = _ckpt(turn_index=1, slots={"main": main}, memory_version=store.memory_version("s1"))
    store.put_checkpoint(at)
    side = SlotRecord(session_id="s1", slot_id="side", created_at=T0)
    store.commit(session_record(turn_index=5, version=1), slots=[side])
    store.memory_set("s1", "k", "later", {})
    store.memory_set("s1", "extra", 1, {})

    marker = at.model_copy(update={"ckpt_id": new_id("ckpt"), "source": "rollback"})
    expect_raises(
        ConflictError, "a restore based on an old version", store.restore_checkpoint, at,
        session_record(turn_index=1, version=0), marker,
    )  # fmt: skip
    expect_equal(store.get_checkpoint(marker.ckpt_id), None, "the marker of a refused restore")
    store.restore_checkpoint(at, session_record(turn_index=1, version=2), marker)
    record = store.get_session("s1")
    expect(record is not None and (record.turn_index, record.version) == (1, 3), "the record")
    expect_equal([s.slot_id for s in store.load_slots("s1")], ["main"], "exactly its slots")
    expect_equal(
        {e.key: e.value for e in store.memory_entries("s1")}, {"k": "then"}, "memory as then"
    )
    expect(store.get_checkpoint(marker.ckpt_id) is not None, "the marker is stored")

    fork = at.model_copy(update={"ckpt_id": new_id("ckpt"), "session_id": "s2"})
    store.restore_checkpoint(at, session_record("s2", parent_id="s1"), fork, create=True)
    child = store.get_session("s2")
    expect(child is not None and child.parent_id == "s1", "the forked session exists")
    head = store.load_slots("s2")[0].head_node_id
    expect_equal(head, "n1", "the fork's slot points at the shared chain")
    expect_equal([m for _, m in store.load_chain("n1")], messages, "the fork shares the messages")
    expect_equal(
        {e.key: e.value for e in store.memory_entries("s2")}, {"k": "then"}, "the fork's memory"
    )


def check_pending_compare_and_set(store: Store) -> None:
    """A pending call stored with a commit reads back; deciding it is a compare-and-set — of
    many concurrent deciders exactly one wins, the rest get 409; an unknown interrupt is 404 and
    a wrong run 409; an approval records its executor and lease."""
    store.create_session(session_record())
    call = _pending()
    store.commit(session_record(), pending=call)
    expect_equal(store.get_pending(call.interrupt_id), call, "the stored call")
    expect_equal(store.list_pending("s1"), [call], "the waiting calls")
    args: dict[str, Any] = {"session_id": "s1", "interrupt_id": call.interrupt_id}
    expect_raises(
        NotFoundError, "an unknown interrupt", store.decide_pending, session_id="s1",
        run_id=call.run_id, interrupt_id="int_nope", to_status="REJECTED",
    )  # fmt: skip
    expect_raises(
        ConflictError, "the wrong run", store.decide_pending, run_id="run_other",
        to_status="REJECTED", **args,
    )  # fmt: skip
    wins: list[str] = []
    conflicts: list[int] = []

    def decide() -> None:
        try:
            store.decide_pending(
                run_id=call.run_id, to_status="APPROVED_EXECUTING", executor="me:1:x",
                lease_seconds=30, decision={"kind": "approve"}, **args,
            )  # fmt: skip
            wins.append("won")
        except ConflictError as exc:
            conflicts.append(exc.to_problem()["status"])

    threads = [threading.Thread(target=decide) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expect_equal((len(wins), conflicts), (1, [409] * 7), "one winner among 8 deciders")
    running = store.get_pending(call.interrupt_id)
    expect(
        running is not None
        and running.status == "APPROVED_EXECUTING"
        and running.executor == "me:1:x"
        and not running.in_doubt,
        "the approved call with its executor",
    )
    expect(store.renew_execution(call.interrupt_id, "me:1:x", ttl=30), "the executor renews")
    expect(not store.renew_execution(call.interrupt_id, "other", ttl=30), "another cannot")
    done = store.decide_pending(
        run_id=call.run_id, from_status="APPROVED_EXECUTING", to_status="EXECUTED",
        result="sent", **args,
    )  # fmt: skip
    expect_equal((done.status, done.result), ("EXECUTED", "sent"), "the executed call")
    expect_equal(store.list_pending("s1"), [], "nothing waits any more")
    expect_equal(
        [c.status for c in store.list_pending("s1", include_resolved=True)],
        ["EXECUTED"],
        "with include_resolved",
    )


def check_pending_expiry_on_list(store: Store) -> None:
    """An overdue call is listed as EXPIRED (never as waiting), and deciding it is 410."""
    store.create_session(session_record())
    past = utcnow() - timedelta(seconds=5)
    call = _pending(expires_at=past)
    store.commit(session_record(), pending=call)
    expect_equal(store.list_pending("s1"), [], "an overdue call is not waiting")
    listed = store.list_pending("s1", include_resolved=True)
    expect_equal([c.status for c in listed], ["EXPIRED"], "it is listed as expired")
    expect_raises(
        GoneError, "deciding an expired call", store.decide_pending, session_id="s1",
        run_id=call.run_id, interrupt_id=call.interrupt_id, to_status="APPROVED_EXECUTING",
    )  # fmt: skip
