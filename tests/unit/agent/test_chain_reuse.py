"""Rollback, fork, roll-forward and refresh reuse the messages a live session holds and read
only what differs (issue 16) — and end in exactly the state a fresh load from the store gives.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    ContextSlot,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    UserMessage,
)
from agcore_lab.agent.chain_reuse import COMPACT_AT, FIRST_PAGE


class Reads:
    """Counts the chain reads of one store object (a spy on our own store, not a mock)."""

    def __init__(self, store: SqliteStore) -> None:
        self.whole: list[int] = []  # messages returned by each load_chain(_history)
        self.tail: list[int] = []  # messages returned by each load_chain_tail
        self._wrap(store, "load_chain", self.whole)
        self._wrap(store, "load_chain_history", self.whole)
        self._wrap(store, "load_chain_tail", self.tail)

    @staticmethod
    def _wrap(store: SqliteStore, name: str, log: list[int]) -> None:
        original: Callable[..., list[Any]] = getattr(store, name)

        def counted(*args: Any) -> list[Any]:
            rows = original(*args)
            log.append(len(rows[0] if isinstance(rows, tuple) else rows))  # (history, nodes)
            return rows

        setattr(store, name, counted)

    def clear(self) -> None:
        self.whole.clear()
        self.tail.clear()

    @property
    def messages(self) -> int:
        return sum(self.whole) + sum(self.tail)


def agent() -> Agent:
    return Agent(name="reuse", model=ScriptedModel())


def assert_as_stored(session: AgentSession) -> None:
    """The live session equals a fresh load of it (nothing reused)."""
    fresh = AgentSession.load(
        session.session_id, session.agent, store=SqliteStore(session.store.path)
    )  # type: ignore[attr-defined]
    assert session.turn_index == fresh.turn_index
    assert session.current_slot_id == fresh.current_slot_id
    assert session.slots.keys() == fresh.slots.keys()
    for slot_id, slot in session.slots.items():
        other = fresh.slots[slot_id]
        assert slot == other, slot_id  # records and messages (dataclass equality)
        assert [m.id for m in slot.messages] == [m.id for m in other.messages]
        assert slot.head_node_id == other.head_node_id
        assert slot.chain_nodes == other.chain_nodes, slot_id


@pytest.fixture
def manager(tmp_path: Path) -> SessionManager:
    return SessionManager(SqliteStore(tmp_path / "reuse.db"), watch_interval=None)


def _turns(manager: SessionManager, sid: str, count: int, prefix: str = "turn") -> None:
    for i in range(count):
        manager.submit_turn_sync(sid, f"{prefix} {i}")


def test_rollback_to_an_ancestor_reads_no_message(manager: SessionManager) -> None:
    sid = manager.create_sync(agent())
    _turns(manager, sid, 30)
    session = manager.get_sync(sid)
    before = list(session.messages)
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)
    reads = Reads(manager.store)  # type: ignore[arg-type]
    for target in (ckpts[0], ckpts[10], ckpts[-1]):  # the head, the middle, the oldest
        reads.clear()
        manager.checkpointer.rollback_sync(sid, target.ckpt_id)
        assert reads.messages <= 1 and not reads.whole  # at most the head's own row
        assert session.turn_index == target.turn_index
        assert len(session.messages) == target.message_count
        assert all(a is b for a, b in zip(session.messages, before, strict=False))
        assert_as_stored(session)


def test_roll_forward_reads_only_the_difference(manager: SessionManager) -> None:
    sid = manager.create_sync(agent())
    _turns(manager, sid, 40)
    session = manager.get_sync(sid)
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)
    head, early = ckpts[0], ckpts[-4]  # 3 turns in
    manager.checkpointer.rollback_sync(sid, early.ckpt_id)
    kept = list(session.messages)
    reads = Reads(manager.store)  # type: ignore[arg-type]
    manager.checkpointer.rollback_sync(sid, head.ckpt_id)  # forward again: 74 messages differ
    differ = head.message_count - early.message_count
    assert not reads.whole  # never the whole chain
    assert differ <= reads.messages < differ + FIRST_PAGE * 4  # the difference, in pages
    assert all(a is b for a, b in zip(session.messages, kept, strict=False))
    assert len(session.messages) == head.message_count
    assert_as_stored(session)


def test_a_long_roll_forward_is_kept_compact(manager: SessionManager) -> None:
    sid = manager.create_sync(agent())
    _turns(manager, sid, COMPACT_AT // 2 + 20)
    session = manager.get_sync(sid)
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)
    head, early = ckpts[0], ckpts[-4]
    manager.checkpointer.rollback_sync(sid, early.ckpt_id)
    kept = list(session.messages)
    reads = Reads(manager.store)  # type: ignore[arg-type]
    manager.checkpointer.rollback_sync(sid, head.ckpt_id)  # more than COMPACT_AT differ
    assert not reads.whole and reads.messages > COMPACT_AT
    assert session.current_slot.messages._tail == []  # all in columns: none kept as objects
    assert all(a is b for a, b in zip(session.messages, kept, strict=False))
    assert len(session.messages) == head.message_count
    assert_as_stored(session)
    manager.submit_turn_sync(sid, "after the roll forward")
    assert_as_stored(session)


def test_rollback_across_branches_reads_the_other_branch_only(manager: SessionManager) -> None:
    sid = manager.create_sync(agent())
    _turns(manager, sid, 20)
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)
    old_head, middle = ckpts[0], ckpts[10]
    manager.checkpointer.rollback_sync(sid, middle.ckpt_id)
    _turns(manager, sid, 5, prefix="new branch")
    session = manager.get_sync(sid)
    shared = session.messages[: middle.message_count]
    reads = Reads(manager.store)  # type: ignore[arg-type]
    manager.checkpointer.rollback_sync(sid, old_head.ckpt_id)  # the first branch again
    assert not reads.whole
    assert reads.messages < old_head.message_count  # not the shared part again
    assert all(a is b for a, b in zip(session.messages, shared, strict=False))
    assert [m.text for m in session.messages][-1] == "[scripted] turn 19"
    assert_as_stored(session)


def test_fork_shares_the_live_parents_messages(manager: SessionManager) -> None:
    sid = manager.create_sync(agent())
    _turns(manager, sid, 30)
    parent = manager.get_sync(sid)
    middle = manager.checkpointer.list_checkpoints_sync(sid)[15]
    reads = Reads(manager.store)  # type: ignore[arg-type]
    child_id = manager.checkpointer.fork_sync(sid, middle.ckpt_id)
    child = manager.get_sync(child_id)
    assert reads.messages <= 1 and not reads.whole  # at most the head's own row
    assert len(child.messages) == middle.message_count
    assert all(a is b for a, b in zip(child.messages, parent.messages, strict=False))
    assert manager.children_sync(sid) == [child_id]
    assert_as_stored(child)
    manager.submit_turn_sync(child_id, "only in the child")  # the child goes its own way
    assert len(parent.messages) == 60 and child.messages[-1].text == "[scripted] only in the child"
    assert_as_stored(child)
    assert_as_stored(parent)


def test_refresh_reads_only_what_another_writer_added(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    mine = SessionManager(SqliteStore(db), watch_interval=None)
    sid = mine.create_sync(agent())
    _turns(mine, sid, 25)
    theirs = SessionManager(SqliteStore(db), agents=[agent()], watch_interval=None)
    _turns(theirs, sid, 2, prefix="elsewhere")
    session = mine.get_sync(sid)
    kept = list(session.messages)
    reads = Reads(mine.store)  # type: ignore[arg-type]
    assert session.refresh_sync()
    assert not reads.whole and reads.messages < 4 + FIRST_PAGE
    assert len(session.messages) == 54
    assert all(a is b for a, b in zip(session.messages, kept, strict=False))
    assert_as_stored(session)


def test_slots_with_merged_links_roll_back_exactly(manager: SessionManager) -> None:
    sid = manager.create_sync(agent())
    _turns(manager, sid, 3)
    session = manager.get_sync(sid)
    session.fork_slot_sync("side", switch=True)
    _turns(manager, sid, 2, prefix="side")
    session.switch_slot_sync("main")
    _turns(manager, sid, 1, prefix="main")
    session.merge_slot_sync("side", strategy="append")  # main gets link nodes
    manager.checkpoint_sync(sid, "merged")
    _turns(manager, sid, 2, prefix="after")
    main = session.slots["main"]
    assert main.chain_nodes  # the merged messages are placed by links
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)
    merged = next(c for c in ckpts if c.label == "merged")
    for target in (merged, ckpts[-1], ckpts[0], merged):
        manager.checkpointer.rollback_sync(sid, target.ckpt_id)
        assert_as_stored(session)
    assert session.slots["main"].chain_nodes == main.chain_nodes  # the same links
    fork = manager.checkpointer.fork_sync(sid, merged.ckpt_id)
    assert_as_stored(manager.get_sync(fork))


def test_chain_position_knows_only_what_it_can_prove() -> None:
    slot = ContextSlot("main")
    links = slot.extend([UserMessage(content="a"), UserMessage(content="b")])
    assert slot.chain_position(links[1].node_id, 1) == 1
    assert slot.chain_position(links[0].node_id, 0) == 0
    assert slot.chain_position(links[0].node_id, 1) is None  # not the node at that depth
    assert slot.chain_position("elsewhere", 0) is None
    other = ContextSlot("other", messages=list(slot.messages), head_node_id=slot.head_node_id)
    assert other.chain_nodes is None and other.chain_position(links[0].node_id, 0) is None
    slot.messages.append(UserMessage(content="changed behind the slot's back"))
    assert slot.chain_position(links[0].node_id, 0) is None  # the head no longer matches


def test_preview_reads_the_newest_messages_only(manager: SessionManager) -> None:
    sid = manager.create_sync(agent())
    _turns(manager, sid, 30)
    manager.get_sync(sid).fork_slot_sync("side")
    ckpt = manager.checkpoint_sync(sid)
    reads = Reads(manager.store)  # type: ignore[arg-type]
    preview = manager.checkpointer.preview_sync(ckpt)
    assert preview.slots == {"main": 60, "side": 60}
    assert [m.text for m in preview.last_messages][-2:] == ["turn 29", "[scripted] turn 29"]
    assert len(preview.last_messages) == 5
    assert not reads.whole and reads.messages == 5 + 1
