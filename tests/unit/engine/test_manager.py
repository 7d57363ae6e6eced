"""``SessionManager``: lifecycle, recovery, replace, the tree, destroy and agent switch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentNotFoundError,
    AgentSession,
    InvalidInputError,
    ScriptedModel,
    SessionManager,
    SessionNotFoundError,
)

MakeManager = Callable[..., SessionManager]
State = Callable[[AgentSession], dict[str, Any]]


def _ckpts(manager: SessionManager, sid: str) -> list[Any]:
    return manager.checkpointer.list_checkpoints_sync(sid)


def test_create_and_create_child(manager: SessionManager, agent: Agent) -> None:
    sid = manager.create_sync(agent)
    child = manager.create_child_sync(sid, Agent(name="helper"))
    assert sid.startswith("ses_") and sid < child  # time-ordered ids
    parent, kid = manager.get_sync(sid), manager.get_sync(child)
    assert kid.bundle is parent.bundle  # shares store, hooks, prices
    assert kid.parent_id == sid and kid.agent.name == "helper"
    assert manager.store.get_session(child).parent_id == sid  # type: ignore[union-attr]
    with pytest.raises(SessionNotFoundError) as info:
        manager.create_child_sync("ses_missing", agent)
    assert info.value.to_problem()["status"] == 404
    assert len(manager.store.list_sessions()) == 2


def test_get_knows_live_sessions_only(make_manager: MakeManager, agent: Agent) -> None:
    first = make_manager()
    sid = first.create_sync(agent)
    assert first.get_sync(sid).session_id == sid
    second = make_manager()  # a restarted kernel: stored, not live
    with pytest.raises(SessionNotFoundError, match="recover"):
        second.get_sync(sid)
    with pytest.raises(SessionNotFoundError) as info:
        second.get_sync("ses_nowhere")
    assert "recover" not in str(info.value)


def test_recover_by_the_registered_agent_name(
    make_manager: MakeManager, agent: Agent, state: State
) -> None:
    first = make_manager()
    sid = first.create_sync(agent)
    for text in ("one", "two"):
        first.submit_turn_sync(sid, text)
    first.get_sync(sid).session_memory.set("topic", {"name": "tides"})
    first.checkpoint_sync(sid)
    expected = state(first.get_sync(sid))

    registered = Agent(name="writer", model=ScriptedModel(["after the restart"]))
    second = make_manager(agents=[registered])
    session = second.recover_sync(sid)
    assert session.agent is registered
    assert state(session) == expected
    assert second.get_sync(sid) is session
    assert second.submit_turn_sync(sid, "three").reply == "after the restart"
    assert _ckpts(second, sid)[0].turn_index == 3


def test_recover_with_an_explicit_or_an_unknown_agent(
    make_manager: MakeManager, agent: Agent
) -> None:
    sid = make_manager().create_sync(agent)
    bare = make_manager(agents=[])
    with pytest.raises(AgentNotFoundError, match="'writer'") as info:
        bare.recover_sync(sid)
    assert info.value.to_problem()["status"] == 404
    with pytest.raises(SessionNotFoundError):
        bare.recover_sync("ses_nowhere", agent=agent)
    explicit = Agent(name="writer", model=ScriptedModel(["explicit"]))
    assert bare.recover_sync(sid, agent=explicit).agent is explicit
    assert bare.submit_turn_sync(sid, "hi").reply == "explicit"


def test_recover_keeps_turns_newer_than_the_latest_checkpoint(
    make_manager: MakeManager, agent: Agent
) -> None:
    first = make_manager()
    sid = first.create_sync(agent)
    first.submit_turn_sync(sid, "checkpointed")
    latest = _ckpts(first, sid)[0]
    unchecked = make_manager(auto_checkpoint=False)
    unchecked.submit_turn_sync(sid, "never checkpointed")  # recovers, commits turn 2
    assert first.store.get_session(sid).turn_index == 2  # type: ignore[union-attr]
    assert _ckpts(first, sid)[0].ckpt_id == latest.ckpt_id

    restarted = make_manager()
    session = restarted.recover_sync(sid)
    assert session.turn_index == 2
    assert [m.text for m in session.messages][-2:] == [
        "never checkpointed",
        "[scripted] never checkpointed",
    ]
    assert restarted.store.get_session(sid).turn_index == 2  # type: ignore[union-attr]
    newest = _ckpts(restarted, sid)[0]
    assert (newest.source, newest.label, newest.parent_ckpt_id) == (
        "auto",
        "recovered",
        latest.ckpt_id,
    )
    assert newest.turn_index == 2
    # Recovering again finds nothing new to record.
    assert make_manager().recover_sync(sid).turn_index == 2
    assert len(_ckpts(restarted, sid)) == len(_ckpts(first, sid))


def test_replace(manager: SessionManager, agent: Agent) -> None:
    sid, other = manager.create_sync(agent), manager.create_sync(agent)
    fresh = AgentSession.load(sid, agent, bundle=manager.bundle)
    manager.replace_sync(sid, fresh)
    assert manager.get_sync(sid) is fresh
    manager.replace_sync(sid, fresh)  # again: still one checkpoint per turn
    before = len(_ckpts(manager, sid))
    manager.submit_turn_sync(sid, "hello")
    assert fresh.turn_index == 1 and len(_ckpts(manager, sid)) == before + 1
    with pytest.raises(InvalidInputError, match=other):
        manager.replace_sync(sid, manager.get_sync(other))
    assert manager.get_sync(sid) is fresh


def test_children_and_parent(manager: SessionManager, agent: Agent) -> None:
    root = manager.create_sync(agent)
    first = manager.create_child_sync(root, agent)
    manager.submit_turn_sync(root, "hi")
    forked = manager.checkpointer.fork_sync(root, _ckpts(manager, root)[0].ckpt_id)
    assert manager.children_sync(root) == [first, forked]
    assert manager.children_sync(first) == []
    assert manager.parent_sync(first) == root and manager.parent_sync(forked) == root
    assert manager.parent_sync(root) is None
    manager.destroy_sync(root)
    assert manager.parent_sync(first) is None and manager.parent_sync(forked) is None
    with pytest.raises(SessionNotFoundError):
        manager.children_sync(root)


def test_tree(make_manager: MakeManager, agent: Agent) -> None:
    manager = make_manager()
    root = manager.create_sync(agent)
    manager.submit_turn_sync(root, "hello")
    a = manager.create_child_sync(root, agent)
    grandchild = manager.create_child_sync(a, agent)
    b = manager.checkpointer.fork_sync(root, _ckpts(manager, root)[0].ckpt_id)
    other = make_manager().create_sync(agent)  # stored, not live in `manager`

    tree = manager.tree_sync()
    assert [n.session_id for n in tree.roots] == [root, other]
    assert [(d, n.session_id) for d, n in tree.walk()] == [
        (0, root),
        (1, a),
        (2, grandchild),
        (1, b),
        (0, other),
    ]
    node = tree.find(root)
    assert node is not None and node.turn_index == 1 and node.total_tokens > 0
    assert node.cost_usd > 0 and node.status == "live" and node.agent_name == "writer"
    assert tree.find(other).status == "stored"  # type: ignore[union-attr]
    frame = tree.to_dataframe()
    assert len(frame) == len(tree) == 5
    assert {"session_id", "parent_id", "depth", "agent_name", "turn_index", "status"} <= set(
        frame.columns
    )
    assert frame.set_index("session_id").loc[grandchild, "depth"] == 2
    assert frame.set_index("session_id").loc[root, "children"] == 2

    assert [n.session_id for _, n in manager.tree_sync(a).walk()] == [a, grandchild]
    with pytest.raises(SessionNotFoundError):
        manager.tree_sync("ses_nowhere")

    manager.destroy_sync(a)
    tree = manager.tree_sync()
    assert [n.session_id for n in tree.roots] == [root, grandchild, other]
    assert tree.find(grandchild).orphan  # type: ignore[union-attr]
    assert not tree.find(b).orphan  # type: ignore[union-attr]


def test_destroy(manager: SessionManager, agent: Agent) -> None:
    sid = manager.create_sync(agent)
    manager.get_sync(sid).session_memory.set("k", "v")
    for text in ("one", "two", "three"):
        manager.submit_turn_sync(sid, text)
    at_two = next(c for c in _ckpts(manager, sid) if c.turn_index == 2)
    forked = manager.checkpointer.fork_sync(sid, at_two.ckpt_id)
    manager.submit_turn_sync(forked, "in the fork")
    helper = manager.create_child_sync(sid, Agent(name="helper"))

    manager.destroy_sync(sid)
    store = manager.store
    assert store.get_session(sid) is None
    assert all(c.session_id != sid for c in store.list_checkpoints())
    assert store.memory_entries(sid) == [] and store.load_slots(sid) == []
    with pytest.raises(SessionNotFoundError):
        manager.get_sync(sid)
    with pytest.raises(SessionNotFoundError):
        manager.destroy_sync(sid)
    # The parent's messages the fork shares stay (4), the third turn's do not.
    conn = store.connection  # type: ignore[attr-defined]
    assert (
        conn.execute("SELECT count(*) FROM messages WHERE session_id = ?", (sid,)).fetchone()[0]
        == 4
    )
    assert manager.parent_sync(helper) is None

    restarted = SessionManager(bundle=manager.bundle, agents=[agent])
    session = restarted.recover_sync(forked)
    assert [m.text for m in session.messages] == [
        "one",
        "[scripted] one",
        "two",
        "[scripted] two",
        "in the fork",
        "[scripted] in the fork",
    ]
    assert session.session_memory.to_dict() == {"k": "v"}


def test_destroy_keeps_what_the_childrens_checkpoints_point_at(
    manager: SessionManager, agent: Agent
) -> None:
    # The child's current slots stop passing through the parent's last messages (a Replace
    # merge); its fork checkpoint still names them, so they must survive the parent.
    sid = manager.create_sync(agent)
    session = manager.get_sync(sid)
    manager.submit_turn_sync(sid, "shared")
    session.fork_slot_sync("side", switch=True)
    manager.submit_turn_sync(sid, "side")
    session.switch_slot_sync("main")
    manager.submit_turn_sync(sid, "main only")
    child = manager.checkpointer.fork_sync(sid, _ckpts(manager, sid)[0].ckpt_id)
    manager.get_sync(child).merge_slot_sync("side", into="main", strategy="replace")
    manager.checkpoint_sync(child)

    manager.destroy_sync(sid)
    restarted = SessionManager(bundle=manager.bundle, agents=[agent])
    for ckpt in _ckpts(restarted, child):
        restarted.checkpointer.rollback_sync(child, ckpt.ckpt_id)
        live = restarted.get_sync(child)
        assert len(live.messages) == ckpt.message_count
        assert all(len(s.messages) >= 2 for s in live.slots.values())
    assert [m.text for m in live.messages][-2:] == ["main only", "[scripted] main only"]


def test_destroy_subtree(manager: SessionManager, agent: Agent) -> None:
    root = manager.create_sync(agent)
    a = manager.create_child_sync(root, agent)
    grandchild = manager.create_child_sync(a, agent)
    b = manager.create_child_sync(root, agent)
    other = manager.create_sync(agent)
    gone = manager.destroy_subtree_sync(root)
    assert set(gone) == {root, a, grandchild, b}
    assert gone.index(grandchild) < gone.index(a) < gone.index(root)  # children first
    assert gone.index(b) < gone.index(root)
    assert [r.session_id for r in manager.store.list_sessions()] == [other]
    assert manager.live_ids() == [other]


def test_switch_agent(manager: SessionManager, agent: Agent, state: State) -> None:
    sid = manager.create_sync(agent)
    session = manager.get_sync(sid)
    manager.submit_turn_sync(sid, "one")
    session.fork_slot_sync("side")
    session.session_memory.set("k", [1, 2])
    manager.submit_turn_sync(sid, "two")
    before, ckpts = state(session), _ckpts(manager, sid)
    calls_before = agent.model.calls  # type: ignore[attr-defined]

    critic = Agent(name="critic", model=ScriptedModel(["from the critic"], model_name="other"))
    manager.switch_agent_sync(sid, critic)
    assert state(session) == before
    assert [c.ckpt_id for c in _ckpts(manager, sid)] == [c.ckpt_id for c in ckpts]  # none taken
    assert manager.store.get_session(sid).agent_name == "critic"  # type: ignore[union-attr]
    assert manager.agents["critic"] is critic

    assert manager.submit_turn_sync(sid, "three").reply == "from the critic"
    assert agent.model.calls == calls_before  # type: ignore[attr-defined]
    assert set(session.cost_tracker.by_model) == {"scripted", "other"}
    assert _ckpts(manager, sid)[0].agent_name == "critic"
    restarted = SessionManager(bundle=manager.bundle, agents=[critic])
    assert restarted.recover_sync(sid).agent is critic
