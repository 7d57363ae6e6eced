"""The design's Phase 17 engine interface: ``Checkpointer(store)`` on its own, the four-step
rollback (``rollback_load`` → ``AgentSession.from_snapshot`` → ``restore_memory`` →
``manager.replace``) giving exactly the one-call rollback's state, ``to_snapshot``,
``SessionManagerConfig`` and ``recover(..., bundle=)``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    Checkpointer,
    ConfigurationError,
    ConflictError,
    InvalidInputError,
    RuntimeBundle,
    ScriptedModel,
    SessionManager,
    SessionManagerConfig,
    SessionNotFoundError,
    SessionSnapshot,
    SqliteStore,
    StaleSessionError,
)

from .conftest import PRICES, MakeManager, State


def _rich(manager: SessionManager, sid: str) -> AgentSession:
    session = manager.get_sync(sid)
    manager.submit_turn_sync(sid, "first")
    session.session_memory.set("a", 1)
    session.session_memory.set("b", {"x": [1, 2]}, {"source": "test"})
    session.fork_slot_sync("side", switch=True, strategy="replace")
    manager.submit_turn_sync(sid, "in side")
    session.switch_slot_sync("main")
    manager.submit_turn_sync(sid, "main again")
    session.set_slot_mode_sync("focused", recent_window=3, summary_override="so far")
    session.pin_message_sync(session.messages[0].id)
    return session


def _change(manager: SessionManager, sid: str, session: AgentSession) -> None:
    manager.submit_turn_sync(sid, "later")
    session.session_memory.set("a", 10)
    session.session_memory.delete("b")
    session.session_memory.set("c", "new")
    session.fork_slot_sync("extra", switch=True)
    manager.submit_turn_sync(sid, "in extra")
    session.set_slot_mode_sync("full", slot_id="main")


def _stored(db: Path, sid: str, agent: Agent, state: State) -> dict[str, Any]:
    # What a fresh process sees: the store's state, not the live object's.
    store = SqliteStore(db)
    try:
        loaded = AgentSession.load(sid, agent, bundle=RuntimeBundle(store=store, prices=PRICES))
        memory = {e.key: (e.value, e.metadata, e.created_at) for e in store.memory_entries(sid)}
        heads = {s.slot_id: (s.head_node_id, s.merge_strategy) for s in store.load_slots(sid)}
        return {**state(loaded), "entries": memory, "heads": heads}
    finally:
        store.close()


def test_the_four_steps_give_exactly_the_state_of_the_one_call_rollback(
    make_manager: MakeManager, agent: Agent, state: State, db: Path
) -> None:
    manager = make_manager()
    sid = manager.create_sync(agent)
    session = _rich(manager, sid)
    target = manager.checkpoint_sync(sid, "rich")
    _change(manager, sid, session)
    latest = manager.checkpoint_sync(sid, "changed")

    manager.checkpointer.rollback_sync(sid, target)  # today's one call
    one_call = state(manager.get_sync(sid)), _stored(db, sid, agent, state)
    marker_one = manager.checkpointer.list_checkpoints_sync(sid)[0]
    manager.checkpointer.rollback_sync(sid, latest)  # back to the changed state
    assert state(manager.get_sync(sid)) != one_call[0]

    snapshot = manager.checkpointer.rollback_load_sync(sid, target)  # 1. read only
    assert manager.checkpointer.list_checkpoints_sync(sid)[0].label == f"rollback to {latest}"
    fresh = AgentSession.from_snapshot(snapshot, agent, manager.bundle)  # 2. pure
    assert fresh.detached is snapshot and fresh.turn_index == snapshot.turn_index
    assert fresh.restore_memory_sync() > 0  # 3. memory as it was
    assert fresh.restore_memory_sync() == 0  # idempotent: nothing new the second time
    version = manager.store.memory_version(sid)
    assert fresh.restore_memory_sync() == 0 and manager.store.memory_version(sid) == version
    manager.replace_sync(sid, fresh)  # 4. the write
    assert manager.get_sync(sid) is fresh and fresh.detached is None

    four_steps = state(fresh), _stored(db, sid, agent, state)
    assert four_steps == one_call
    marker = manager.checkpointer.list_checkpoints_sync(sid)[0]
    assert (marker.source, marker.parent_ckpt_id) == (marker_one.source, marker_one.parent_ckpt_id)
    assert marker.slots.keys() == marker_one.slots.keys()
    # It goes on like any session.
    assert manager.submit_turn_sync(sid, "after").turn_index == one_call[0]["turn_index"] + 1


def test_from_snapshot_reads_and_writes_nothing(
    manager: SessionManager, agent: Agent, state: State
) -> None:
    sid = manager.create_sync(agent)
    _rich(manager, sid)
    ckpt = manager.checkpoint_sync(sid, "rich")
    snapshot = manager.checkpointer.rollback_load_sync(sid, ckpt)

    calls: list[str] = []

    class Watching:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(self._inner, name)

    bundle = RuntimeBundle(store=Watching(manager.store), prices=PRICES)  # type: ignore[arg-type]
    calls.clear()
    session = AgentSession.from_snapshot(snapshot, agent, bundle)
    assert calls == []  # no store call at all
    expected = state(manager.get_sync(sid))
    got = {k: v for k, v in state(session).items() if k != "memory"}  # memory reads the store
    assert got == {k: v for k, v in expected.items() if k != "memory"}
    assert session.slots["side"].merge_strategy is not None


def test_a_detached_session_runs_nothing_until_replaced(
    manager: SessionManager, agent: Agent, counts: Any
) -> None:
    sid = manager.create_sync(agent)
    manager.submit_turn_sync(sid, "one")
    ckpt = manager.checkpoint_sync(sid, "one")
    session = AgentSession.from_snapshot(
        manager.checkpointer.rollback_load_sync(sid, ckpt), agent, manager.bundle
    )
    before = counts(manager)
    for act in (
        lambda: session.submit_turn_sync("hello"),
        lambda: session.fork_slot_sync("x"),
        lambda: session.switch_slot_sync("main"),
    ):
        with pytest.raises(ConflictError, match="manager.replace"):
            act()
    assert counts(manager) == before


def test_replace_refuses_a_snapshot_of_a_session_that_moved_on(
    manager: SessionManager, agent: Agent, counts: Any
) -> None:
    sid = manager.create_sync(agent)
    manager.submit_turn_sync(sid, "one")
    ckpt = manager.checkpoint_sync(sid, "one")
    snapshot = manager.checkpointer.rollback_load_sync(sid, ckpt)
    manager.submit_turn_sync(sid, "two")  # another write after the load
    session = AgentSession.from_snapshot(snapshot, agent, manager.bundle)
    before = counts(manager)
    with pytest.raises(StaleSessionError):
        manager.replace_sync(sid, session)
    assert counts(manager) == before and manager.get_sync(sid).turn_index == 2


def test_replace_refuses_an_edited_or_foreign_snapshot(
    manager: SessionManager, agent: Agent
) -> None:
    sid = manager.create_sync(agent)
    manager.submit_turn_sync(sid, "one")
    ckpt = manager.checkpoint_sync(sid, "one")
    snapshot = manager.checkpointer.rollback_load_sync(sid, ckpt)
    edited = snapshot.model_copy(update={"turn_index": 7})
    with pytest.raises(InvalidInputError, match="import_snapshot"):
        manager.replace_sync(sid, AgentSession.from_snapshot(edited, agent, manager.bundle))
    foreign = snapshot.model_copy(update={"ckpt_id": None})
    with pytest.raises(InvalidInputError, match="import_snapshot"):
        manager.replace_sync(sid, AgentSession.from_snapshot(foreign, agent, manager.bundle))
    assert manager.get_sync(sid).turn_index == 1


def test_to_snapshot_is_the_live_state(manager: SessionManager, agent: Agent) -> None:
    sid = manager.create_sync(agent)
    session = _rich(manager, sid)
    snap = session.to_snapshot_sync()
    assert isinstance(snap, SessionSnapshot) and snap.session_version == session.version
    assert snap.turn_index == session.turn_index and snap.current_slot_id == "main"
    assert {s.slot_id: len(s.message_ids) for s in snap.slots} == {
        sid_: len(s.messages) for sid_, s in session.slots.items()
    }
    assert {e.key: e.value for e in snap.memory} == {"a": 1, "b": {"x": [1, 2]}}
    # The same as exporting a checkpoint taken now (but for the bookkeeping fields).
    exported = manager.checkpointer.export_snapshot_sync(manager.checkpoint_sync(sid))
    skip = {"exported_at", "ckpt_id", "session_version", "parent_id"}
    assert snap.model_dump(exclude=skip) == exported.model_dump(exclude=skip)
    # A new session from it has the same conversation.
    copy_id = manager.checkpointer.import_snapshot_sync(snap)
    assert manager.recover_sync(copy_id).messages == session.messages


def test_a_checkpointer_works_on_a_bare_store(db: Path, agent: Agent, state: State) -> None:
    store = SqliteStore(db)
    checkpointer = Checkpointer(store)  # no manager anywhere
    session = AgentSession(agent, store=store)
    session.submit_turn_sync("one")
    session.session_memory.set("k", "then")
    first = checkpointer.checkpoint_sync(session, "one")
    expected = state(session)
    session.submit_turn_sync("two")
    session.session_memory.set("k", "now")
    assert [c.label for c in checkpointer.list_checkpoints_sync(session.session_id)] == ["one"]
    snap = checkpointer.rollback_load_sync(session.session_id, first)
    assert snap.turn_index == 1 and {e.key: e.value for e in snap.memory} == {"k": "then"}
    assert session.turn_index == 2  # a load changes nothing

    marker = checkpointer.rollback_sync(session.session_id, first)  # the stored state
    assert session.is_stale() and session.refresh_sync()
    assert state(session) == expected
    assert checkpointer.list_checkpoints_sync(session.session_id)[0].ckpt_id == marker
    child = checkpointer.fork_sync(session.session_id, first)
    assert AgentSession.load(child, agent, store=store).turn_index == 1
    assert checkpointer.delete_all_sync(session.session_id) == 2
    assert checkpointer.list_checkpoints_sync(session.session_id) == []
    with pytest.raises(SessionNotFoundError):
        checkpointer.list_checkpoints_sync("ses_nowhere")
    other = AgentSession(agent, store=SqliteStore(":memory:"))
    with pytest.raises(InvalidInputError, match="another store"):
        checkpointer.checkpoint_sync(other)
    store.close()


def test_the_managers_checkpointer_keeps_todays_behaviour(
    manager: SessionManager, agent: Agent
) -> None:
    events: list[str] = []
    manager.add_listener(lambda e: events.append(e.kind))
    sid = manager.create_sync(agent)
    manager.submit_turn_sync(sid, "one")
    ckpt = manager.checkpointer.list_checkpoints_sync(sid)[0].ckpt_id
    manager.submit_turn_sync(sid, "two")
    manager.checkpointer.rollback_sync(sid, ckpt)
    assert manager.get_sync(sid).turn_index == 1  # the live object went back too
    assert "rollback" in events and manager.checkpointer.store is manager.store


def test_session_manager_config(db: Path, agent: Agent) -> None:
    store = SqliteStore(db)
    quiet = SessionManager(store, config=SessionManagerConfig(auto_checkpoint=False))
    sid = quiet.create_sync(agent)
    quiet.submit_turn_sync(sid, "hi")
    assert quiet.auto_checkpoint is False and quiet.checkpointer.list_checkpoints_sync(sid) == []
    bundle = RuntimeBundle(store=store, prices=PRICES, lease_seconds=3.0)
    configured = SessionManager(config=SessionManagerConfig(default_bundle=bundle))
    assert configured.bundle is bundle and configured.store is store
    sid2 = configured.create_sync(agent)
    assert configured.get_sync(sid2).bundle is bundle
    assert len(configured.checkpointer.list_checkpoints_sync(sid2)) == 1  # auto: on by default
    assert configured.config == SessionManagerConfig(auto_checkpoint=True, default_bundle=bundle)
    # Today's keywords still work, and agree with the config or are refused.
    assert SessionManager(store, auto_checkpoint=False).auto_checkpoint is False
    with pytest.raises(ConfigurationError, match="disagree"):
        SessionManager(
            store, auto_checkpoint=True, config=SessionManagerConfig(auto_checkpoint=False)
        )
    with pytest.raises(ConfigurationError):
        SessionManager(SqliteStore(":memory:"), config=SessionManagerConfig(default_bundle=bundle))
    store.close()


def test_recover_with_a_bundle(make_manager: MakeManager, agent: Agent, db: Path) -> None:
    first = make_manager()
    sid = first.create_sync(agent)
    first.submit_turn_sync(sid, "hi")
    seen: list[int] = []
    second = make_manager()
    bundle = RuntimeBundle(
        store=second.store, prices=PRICES, hooks=[lambda s, r: seen.append(r.turn_index)]
    )
    session = second.recover_sync(sid, agent, bundle)
    assert session.bundle is bundle and session.turn_index == 1
    second.submit_turn_sync(sid, "again")
    assert seen == [2]  # the bundle's hook ran
    with pytest.raises(InvalidInputError, match="store"):
        second.recover_sync(sid, agent, RuntimeBundle(store=SqliteStore(":memory:")))
    with pytest.raises(InvalidInputError, match="store"):
        second.recover_sync(sid, bundle=RuntimeBundle(store=SqliteStore(":memory:")))


def test_recover_takes_a_scripted_agent_by_keyword(manager: SessionManager) -> None:
    agent = Agent(name="other", model=ScriptedModel(["x"]))
    sid = manager.create_sync(agent)
    assert manager.recover_sync(sid, agent=agent).agent is agent
