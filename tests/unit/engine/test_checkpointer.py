"""``Checkpointer``: listing, exact rollback, fork, errors, retention, previews, storage cost."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    CheckpointNotFoundError,
    InvalidInputError,
    SessionManager,
    SessionNotFoundError,
)
from agcore_lab.ids import utcnow

MakeManager = Callable[..., SessionManager]
State = Callable[[AgentSession], dict[str, Any]]
Counts = Callable[[SessionManager], dict[str, int]]


def _ckpts(manager: SessionManager, sid: str) -> list[Any]:
    return manager.checkpointer.list_checkpoints_sync(sid)


def _at_turn(manager: SessionManager, sid: str, turn: int) -> str:
    found = [c for c in _ckpts(manager, sid) if c.turn_index == turn and c.source == "auto"]
    return str(found[0].ckpt_id)


def _session_with_turns(manager: SessionManager, agent: Agent, turns: int) -> str:
    sid = manager.create_sync(agent)
    for n in range(1, turns + 1):
        manager.submit_turn_sync(sid, f"turn {n}")
    return sid


def test_list_checkpoints_newest_first_with_their_fields(
    manager: SessionManager, agent: Agent
) -> None:
    sid = _session_with_turns(manager, agent, 3)
    session = manager.get_sync(sid)
    manual = manager.checkpoint_sync(sid, label="mine")
    ckpts = _ckpts(manager, sid)
    assert ckpts[0].ckpt_id == manual
    assert [c.turn_index for c in ckpts] == [3, 3, 2, 1, 0]
    assert [c.source for c in ckpts] == ["manual", "auto", "auto", "auto", "auto"]
    assert [c.label for c in ckpts] == ["mine", None, None, None, "start"]
    assert [c.message_count for c in ckpts] == [6, 6, 4, 2, 0]
    assert [c.ckpt_id for c in ckpts] == sorted((c.ckpt_id for c in ckpts), reverse=True)
    assert [c.parent_ckpt_id for c in ckpts] == [c.ckpt_id for c in ckpts[1:]] + [None]
    assert [c.created_at for c in ckpts] == sorted((c.created_at for c in ckpts), reverse=True)
    assert {c.session_id for c in ckpts} == {sid}
    assert {c.agent_name for c in ckpts} == {"writer"}
    newest = ckpts[0]
    assert newest.prompt_tokens == session.usage.prompt_tokens > 0
    assert newest.completion_tokens == session.usage.completion_tokens > 0
    assert newest.total_tokens == newest.prompt_tokens + newest.completion_tokens
    assert newest.cost_usd == pytest.approx(session.cost_so_far) and newest.cost_usd > 0
    assert [c.total_tokens for c in ckpts[1:]] == sorted(
        (c.total_tokens for c in ckpts[1:]), reverse=True
    )
    assert manager.checkpointer.get_checkpoint_sync(manual, sid).label == "mine"
    with pytest.raises(SessionNotFoundError):
        manager.checkpointer.list_checkpoints_sync("ses_nowhere")


def _build_rich_state(manager: SessionManager, sid: str) -> AgentSession:
    """Several slots (forked and merged), memory, a Focused mode with pins, a summary."""
    session = manager.get_sync(sid)
    manager.submit_turn_sync(sid, "first")
    session.session_memory.set("a", 1)
    session.session_memory.set("b", {"x": [1, 2]}, {"source": "test"})
    session.fork_slot_sync("side", switch=True)
    manager.submit_turn_sync(sid, "in side")
    session.switch_slot_sync("main")
    manager.submit_turn_sync(sid, "main again")
    session.merge_slot_sync("side")
    session.set_slot_mode_sync("focused", recent_window=3, summary_override="so far")
    session.pin_message_sync(session.messages[0].id)
    session.summarize_sync()
    return session


def _change_everything(manager: SessionManager, sid: str, session: AgentSession) -> None:
    manager.submit_turn_sync(sid, "later")
    session.session_memory.set("a", 10)
    session.session_memory.delete("b")
    session.session_memory.set("c", "new")
    session.fork_slot_sync("extra", switch=True)
    manager.submit_turn_sync(sid, "in extra")
    session.set_slot_mode_sync("full", slot_id="main")
    session.pin_message_sync(session.slot("main").messages[0].id, slot_id="main", pinned=False)
    session.summarize_sync("main")


def test_rollback_restores_exactly_the_checkpoint_state(
    make_manager: MakeManager, agent: Agent, state: State
) -> None:
    manager = make_manager()
    sid = manager.create_sync(agent)
    session = _build_rich_state(manager, sid)
    target = manager.checkpoint_sync(sid, label="rich")
    expected = state(session)
    assert len(expected["slots"]) == 2 and expected["last_summary_turn"] == 3
    assert expected["slots"]["main"]["pinned_ids"] and expected["memory"]["b"] == {"x": [1, 2]}

    _change_everything(manager, sid, session)
    later = manager.checkpoint_sync(sid, label="later")
    changed = state(session)
    assert changed != expected and set(changed["slots"]) == {"main", "side", "extra"}
    assert changed["current_slot_id"] == "extra" and changed["turn_index"] == 5

    marker = manager.checkpointer.rollback_sync(sid, target)
    assert state(session) == expected  # the live object
    assert session.get_conversation_summary() == expected["memory"]["conversation_summary"]
    restarted = make_manager()  # the store: a new manager on the file
    assert state(restarted.recover_sync(sid)) == expected
    assert [s.slot_id for s in restarted.store.load_slots(sid)] == ["main", "side"]
    newest = _ckpts(manager, sid)[0]
    assert (newest.ckpt_id, newest.source, newest.parent_ckpt_id) == (marker, "rollback", target)

    # Nothing was lost: roll forward again.
    manager.checkpointer.rollback_sync(sid, later)
    assert state(session) == changed
    assert state(make_manager().recover_sync(sid)) == changed


def test_fork_starts_a_child_and_leaves_the_original_untouched(
    make_manager: MakeManager, agent: Agent, state: State, counts: Counts
) -> None:
    manager = make_manager()
    sid = manager.create_sync(agent)
    session = manager.get_sync(sid)
    manager.submit_turn_sync(sid, "one")
    session.session_memory.set("seen", ["one"])
    manager.submit_turn_sync(sid, "two")
    at_two = _at_turn(manager, sid, 2)
    manager.submit_turn_sync(sid, "three")
    session.session_memory.set("seen", ["one", "three"])
    original, rows = state(session), counts(manager)

    child = manager.checkpointer.fork_sync(sid, at_two)
    assert state(session) == original
    assert manager.store.get_session(sid).turn_index == 3  # type: ignore[union-attr]
    assert counts(manager)["messages"] == rows["messages"]  # the history is shared, not copied

    kid = manager.get_sync(child)
    assert kid.turn_index == 2 and kid.parent_id == sid
    assert [m.id for m in kid.messages] == [m.id for m in session.messages[:4]]
    assert kid.session_memory.to_dict() == {"seen": ["one"]}
    assert manager.parent_sync(child) == sid and child in manager.children_sync(sid)
    (marker,) = _ckpts(manager, child)
    assert (marker.source, marker.parent_ckpt_id, marker.turn_index) == ("fork", at_two, 2)

    manager.submit_turn_sync(child, "two and a half")
    assert state(session) == original
    assert [m.text for m in kid.messages][4:] == ["two and a half", "[scripted] two and a half"]
    assert state(make_manager().recover_sync(child)) == state(kid)


def test_unknown_session_or_checkpoint_is_not_found(manager: SessionManager, agent: Agent) -> None:
    sid = _session_with_turns(manager, agent, 1)
    ckpt = _ckpts(manager, sid)[0].ckpt_id
    checkpointer = manager.checkpointer
    for call, error in [
        (lambda: checkpointer.rollback_sync(sid, "ckpt_nope"), CheckpointNotFoundError),
        (lambda: checkpointer.rollback_sync("ses_nope", ckpt), SessionNotFoundError),
        (lambda: checkpointer.fork_sync(sid, "ckpt_nope"), CheckpointNotFoundError),
        (lambda: checkpointer.fork_sync("ses_nope", ckpt), SessionNotFoundError),
        (lambda: checkpointer.preview_sync("ckpt_nope"), CheckpointNotFoundError),
        (lambda: checkpointer.export_snapshot_sync("ckpt_nope"), CheckpointNotFoundError),
    ]:
        with pytest.raises(error) as info:
            call()
        assert info.value.to_problem()["status"] == 404


def test_another_sessions_checkpoint_is_refused(
    manager: SessionManager, agent: Agent, state: State, counts: Counts
) -> None:
    mine = _session_with_turns(manager, agent, 2)
    theirs = _session_with_turns(manager, agent, 1)
    foreign = _ckpts(manager, theirs)[0].ckpt_id
    before = (state(manager.get_sync(mine)), state(manager.get_sync(theirs)), counts(manager))
    with pytest.raises(InvalidInputError, match="belongs to session"):
        manager.checkpointer.rollback_sync(mine, foreign)
    with pytest.raises(InvalidInputError):
        manager.checkpointer.fork_sync(mine, foreign)
    after = (state(manager.get_sync(mine)), state(manager.get_sync(theirs)), counts(manager))
    assert after == before


def test_delete_all(manager: SessionManager, agent: Agent, state: State) -> None:
    sid = _session_with_turns(manager, agent, 2)
    other = _session_with_turns(manager, agent, 1)
    first = _ckpts(manager, sid)[-1].ckpt_id
    before = state(manager.get_sync(sid))
    assert manager.checkpointer.delete_all_sync(sid) == 3
    assert _ckpts(manager, sid) == [] and len(_ckpts(manager, other)) == 2
    assert state(manager.get_sync(sid)) == before
    assert manager.store.get_session(sid) is not None
    with pytest.raises(CheckpointNotFoundError):
        manager.checkpointer.rollback_sync(sid, first)
    assert manager.submit_turn_sync(sid, "more").turn_index == 3


def test_to_dataframe(manager: SessionManager, agent: Agent) -> None:
    sid = _session_with_turns(manager, agent, 2)
    other = _session_with_turns(manager, agent, 1)
    everything = manager.checkpointer.to_dataframe()
    assert len(everything) == 5 and set(everything["session_id"]) == {sid, other}
    assert everything["ckpt_id"].is_monotonic_decreasing
    one = manager.checkpointer.to_dataframe(sid)
    assert one["turn_index"].tolist() == [2, 1, 0] and set(one["session_id"]) == {sid}
    assert (one["total_tokens"] == one["prompt_tokens"] + one["completion_tokens"]).all()
    assert one.loc[0, "cost_usd"] > 0 and one.loc[0, "message_count"] == 4
    manager.checkpointer.delete_all_sync(other)
    empty = manager.checkpointer.to_dataframe(other)
    assert empty.empty and list(empty.columns) == list(one.columns)


def test_prune_keep_last_never_removes_a_fork_point(manager: SessionManager, agent: Agent) -> None:
    sid = _session_with_turns(manager, agent, 5)
    fork_point = _at_turn(manager, sid, 1)
    child = manager.checkpointer.fork_sync(sid, fork_point)
    before = [c.ckpt_id for c in _ckpts(manager, sid)]  # turns 5..0

    report = manager.checkpointer.prune_sync(sid, keep_last=2)
    assert set(report.removed) == set(before[2:]) - {fork_point}
    assert report.kept_protected == [fork_point]
    assert report.bytes_reclaimed > 0
    assert [c.ckpt_id for c in _ckpts(manager, sid)] == [*before[:2], fork_point]
    assert len(_ckpts(manager, child)) == 1  # other sessions untouched
    manager.checkpointer.rollback_sync(sid, fork_point)
    assert manager.get_sync(sid).turn_index == 1

    again = manager.checkpointer.prune_sync(sid, keep_last=10)
    assert (again.removed, again.bytes_reclaimed) == ([], 0)
    with pytest.raises(InvalidInputError):
        manager.checkpointer.prune_sync(sid)
    with pytest.raises(InvalidInputError):
        manager.checkpointer.prune_sync(sid, keep_last=-1)


def test_prune_older_than(manager: SessionManager, agent: Agent) -> None:
    sid = _session_with_turns(manager, agent, 2)
    start = _ckpts(manager, sid)[-1].ckpt_id
    other = _session_with_turns(manager, agent, 1)
    middle = utcnow()
    time.sleep(0.2)
    for n in (3, 4):
        manager.submit_turn_sync(sid, f"turn {n}")
    child = manager.checkpointer.fork_sync(sid, start)

    report = manager.checkpointer.prune_sync(older_than=utcnow() - middle)  # every session
    assert len(report.removed) == 2 + 2 and report.kept_protected == [start]
    assert [c.turn_index for c in _ckpts(manager, sid)] == [4, 3, 0]
    assert _ckpts(manager, other) == [] and len(_ckpts(manager, child)) == 1
    assert report.bytes_reclaimed > 0


def test_preview(manager: SessionManager, agent: Agent, counts: Counts) -> None:
    sid = manager.create_sync(agent)
    session = manager.get_sync(sid)
    for n in range(1, 4):
        manager.submit_turn_sync(sid, f"turn {n}")
    session.session_memory.set("k", "then")
    session.fork_slot_sync("side")
    ckpt = manager.checkpoint_sync(sid)
    session.session_memory.set("k", "now")
    manager.submit_turn_sync(sid, "turn 4")
    rows = counts(manager)

    preview = manager.checkpointer.preview_sync(ckpt)
    assert preview.meta.ckpt_id == ckpt and preview.meta.turn_index == 3
    assert preview.slots == {"main": 6, "side": 6} and preview.current_slot_id == "main"
    assert [m.text for m in preview.last_messages] == [
        "[scripted] turn 1",
        "turn 2",
        "[scripted] turn 2",
        "turn 3",
        "[scripted] turn 3",
    ]
    assert preview.memory == {"k": "then"}
    assert counts(manager) == rows and session.turn_index == 4


def test_a_checkpoint_row_does_not_grow_with_the_history(
    manager: SessionManager, agent: Agent
) -> None:
    sid = manager.create_sync(agent)
    for n in range(1, 201):
        manager.submit_turn_sync(sid, f"turn {n}: " + "a long question " * 12)
    frame = manager.store.read_dataframe(  # type: ignore[attr-defined]
        """SELECT turn_index,
                  length(slots_json) + length(spend_json) AS detail,
                  length(session_id) + length(ckpt_id) + length(parent_ckpt_id)
                  + length(created_at) + length(source) + length(agent_name)
                  + length(current_slot_id) + length(slots_json) + length(spend_json)
                  + 8 * 7 AS row_bytes
           FROM checkpoints WHERE session_id = ? AND turn_index IN (5, 200)
           ORDER BY turn_index""",
        [sid],
    )
    early, late = frame.to_dict("records")
    assert late["detail"] <= early["detail"] + 32  # a few more digits in the token counts
    assert late["row_bytes"] <= early["row_bytes"] + 32
    assert late["row_bytes"] < 400
    history = manager.store.connection.execute(  # type: ignore[attr-defined]
        "SELECT sum(length(content)) FROM messages WHERE session_id = ?", (sid,)
    ).fetchone()[0]
    assert history > 100 * late["row_bytes"]  # ~80 KB of history, one small row


def test_the_checkpoints_table_reads_straight_into_pandas(
    manager: SessionManager, agent: Agent
) -> None:
    sid = _session_with_turns(manager, agent, 3)
    manager.checkpoint_sync(sid, label="mine")
    df = pd.read_sql("select * from checkpoints", manager.store.connection)  # type: ignore[attr-defined]
    flat = {
        "ckpt_id",
        "session_id",
        "parent_ckpt_id",
        "turn_index",
        "created_at",
        "label",
        "source",
        "message_count",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "agent_name",
        "current_slot_id",
    }
    assert flat <= set(df.columns)
    for column in ("turn_index", "message_count", "prompt_tokens", "completion_tokens"):
        assert pd.api.types.is_integer_dtype(df[column]), column
    assert pd.api.types.is_float_dtype(df["cost_usd"])
    assert pd.to_datetime(df["created_at"], utc=True).is_monotonic_increasing
    assert df.groupby("source").size().to_dict() == {"auto": 4, "manual": 1}
    assert df.loc[df["label"] == "mine", "turn_index"].tolist() == [3]
    assert df.sort_values("turn_index")["message_count"].tolist() == [0, 2, 4, 6, 6]
