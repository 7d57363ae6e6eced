"""How many write transactions the manager's common operations take (each is a disk sync
point and a lock round trip; dispatch pays them per child)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agcore_lab import (
    Agent,
    DispatchConfig,
    InvalidInputError,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    StaleSessionError,
    SubTaskResult,
    Tool,
    ToolCall,
)
from agcore_lab.store.base import CkptMeta, SessionRecord


def _writes(store: SqliteStore) -> list[str]:
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    return statements


def test_creating_a_session_with_its_start_checkpoint_is_one_write(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "w.db")
    manager = SessionManager(store)
    events: list[str] = []
    manager.add_listener(lambda event: events.append(event.kind))
    statements = _writes(store)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel()))
    assert sum(s.startswith("BEGIN IMMEDIATE") for s in statements) == 1
    (start,) = manager.checkpointer.list_checkpoints_sync(sid)
    assert start.label == "start" and start.turn_index == 0 and start.parent_ckpt_id is None
    assert events[:2] == ["created", "checkpoint"]


def test_a_dispatch_child_is_created_with_its_note_and_checkpoint_at_once(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "d.db")
    manager = SessionManager(store)
    lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
    statements = _writes(store)
    result = manager.dispatch_sync(lead, Agent(name="w", model=ScriptedModel(["done"])), "go")
    store.connection.set_trace_callback(None)
    child = store.get_session(result.child_id)
    assert child is not None and child.parent_id == lead
    assert child.metadata["shared_memory"] == {"parent_id": lead, "namespace": lead}
    labels = [c.label for c in manager.checkpointer.list_checkpoints_sync(result.child_id)]
    assert labels[-1] == "start" and len(labels) == 2  # start, then after its turn
    # create (+ note + start checkpoint), lease, turn (+ checkpoint, release, result summary).
    assert sum(s.startswith("BEGIN IMMEDIATE") for s in statements) == 3
    assert result.summary == "done"
    assert manager.dispatcher.child_memory(result.child_id) == {"result_summary": "done"}
    (entry,) = store.memory_entries(result.child_id)
    assert entry.metadata == {"written_by": "dispatch"}
    after, start = manager.checkpointer.list_checkpoints_sync(result.child_id)
    # As when the summary was written after the checkpoint: the checkpoint's memory is older.
    assert (after.parent_ckpt_id, after.memory_version, after.turn_index) == (start.ckpt_id, 0, 1)
    assert _lease(store, result.child_id) is None


def _lease(store: SqliteStore, sid: str) -> object:
    row = store.connection.execute(
        "SELECT lease_holder FROM sessions WHERE session_id = ?", (sid,)
    ).fetchone()
    return row[0]


def _same_checkpoint(one: CkptMeta, other: CkptMeta) -> dict[str, object]:
    # What a checkpoint holds, less its own id, time and the ids of the session's rows.
    skip = {"ckpt_id", "session_id", "parent_ckpt_id", "created_at", "slots", "pending"}
    return {k: (v, getattr(other, k)) for k, v in one if k not in skip and v != getattr(other, k)}


def test_a_manager_turn_is_one_write_with_its_checkpoint_and_lease_release(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "t.db")
    folded, separate = SessionManager(store), SessionManager(store)
    events: list[str] = []
    folded.add_listener(lambda event: events.append(event.kind))
    agent = Agent(name="a", model=ScriptedModel())
    one, two = folded.create_sync(agent), separate.create_sync(agent)
    separate.get_sync(two).add_turn_end_hook(lambda session, result: None)  # writes after
    statements = _writes(store)
    folded.submit_turn_sync(one, "hello")
    folding = sum(s.startswith("BEGIN IMMEDIATE") for s in statements)
    statements.clear()
    separate.submit_turn_sync(two, "hello")
    store.connection.set_trace_callback(None)
    # lease + turn (with checkpoint and lease release), against lease, turn, checkpoint,
    # release when another hook runs after the commit.
    assert (folding, sum(s.startswith("BEGIN IMMEDIATE") for s in statements)) == (2, 4)
    assert events[-2:] == ["turn", "checkpoint"]
    for sid, manager in ((one, folded), (two, separate)):
        record = store.get_session(sid)
        assert record is not None and _lease(store, sid) is None
        after, start = manager.checkpointer.list_checkpoints_sync(sid)
        assert after.parent_ckpt_id == start.ckpt_id and after.label is None
        assert after.slots["main"].head_node_id == manager.get_sync(sid).current_slot.head_node_id
    (a, _), (b, _) = (
        m.checkpointer.list_checkpoints_sync(s) for s, m in ((one, folded), (two, separate))
    )
    assert _same_checkpoint(a, b) == {}
    # Rolling back to it gives the turn's state.
    folded.submit_turn_sync(one, "again")
    folded.checkpointer.rollback_sync(one, a.ckpt_id)
    assert [m.content for m in folded.get_sync(one).current_slot.messages] == [
        "hello",
        "[scripted] hello",
    ]


def test_a_commit_with_memory_that_is_not_json_writes_nothing(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "j.db")
    manager = SessionManager(store)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel()))
    record = manager.get_sync(sid).record()
    with pytest.raises(InvalidInputError, match="result_summary"):
        store.commit(record, memory=[("result_summary", {1, 2}, {})])  # type: ignore[list-item]
    assert store.session_version(sid) == record.version
    assert store.memory_entries(sid) == []
    store.commit(record, memory=[("result_summary", "ok", {"by": "test"})])
    assert [(e.key, e.value, e.metadata) for e in store.memory_entries(sid)] == [
        ("result_summary", "ok", {"by": "test"})
    ]


def _bank() -> Agent:
    def transfer(to: str, amount: int) -> str:
        """Send money."""
        return f"sent {amount} to {to}"

    model = ScriptedModel([ToolCall(name="transfer", arguments={"to": "u2", "amount": 5}), "ok"])
    return Agent(
        name="bank", model=model, tools=[Tool.from_function(transfer, requires_approval=True)]
    )


def test_a_turn_waiting_for_approval_is_checkpointed_with_its_call_in_its_commit(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "p.db")
    folded, separate = SessionManager(store), SessionManager(store)
    one, two = folded.create_sync(_bank()), separate.create_sync(_bank())
    separate.get_sync(two).add_turn_end_hook(lambda session, result: None)
    statements = _writes(store)
    call = folded.submit_turn_sync(one, "pay").pending_tool_call
    assert sum(s.startswith("BEGIN IMMEDIATE") for s in statements) == 2
    store.connection.set_trace_callback(None)
    other = separate.submit_turn_sync(two, "pay").pending_tool_call
    assert call is not None and other is not None
    a = folded.checkpointer.list_checkpoints_sync(one)[0]
    b = separate.checkpointer.list_checkpoints_sync(two)[0]
    assert a.pending is not None and b.pending is not None
    assert a.pending.interrupt_id == call.interrupt_id
    assert a.pending.status == b.pending.status == "PENDING_APPROVAL"
    (stored,) = store.list_pending(one, include_resolved=True)
    assert a.pending.to_stored() == stored.to_stored()  # what the old path read back
    times = {"created_at", "updated_at", "expires_at"}
    skip = {"interrupt_id", "run_id", "session_id", "tool_call_id", *times}
    assert a.pending.model_dump(exclude=skip) == b.pending.model_dump(exclude=skip)
    assert _same_checkpoint(a, b) == {}
    # The approval continues from it as from any checkpoint.
    assert folded.resume_sync(one, call.run_id, call.interrupt_id, "approve").reply == "ok"


def _reads_outside_writes(statements: list[str]) -> list[str]:
    reads, inside = [], False
    for statement in statements:
        if statement.startswith("BEGIN"):
            inside = True
        elif statement in ("COMMIT", "ROLLBACK"):
            inside = False
        elif not inside:
            reads.append(" ".join(statement.split()))
    return reads


def test_a_dispatch_child_reads_only_what_it_cannot_know(tmp_path: Path) -> None:
    # A child being created has written no memory and waits on no call: its start
    # checkpoint reads nothing. Left: is the parent there. Whether the child's turn wrote its
    # own result summary (another writer may have) is looked up in the commit itself.
    store = SqliteStore(tmp_path / "r.db")
    manager = SessionManager(store)
    lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
    statements = _writes(store)
    result = manager.dispatch_sync(lead, Agent(name="w", model=ScriptedModel(["done"])), "go")
    store.connection.set_trace_callback(None)
    assert _reads_outside_writes(statements) == [
        f"SELECT version FROM sessions WHERE session_id = '{lead}'",
    ]
    after, start = manager.checkpointer.list_checkpoints_sync(result.child_id)
    assert (start.label, start.memory_version, start.pending, start.turn_index) == (
        "start",
        0,
        None,
        0,
    )
    assert start.slots["main"].head_node_id is None and start.message_count == 0
    assert after.slots["main"].head_node_id is not None and after.message_count == 2


def test_a_start_checkpoint_restores_an_empty_session(tmp_path: Path) -> None:
    # The start checkpoint is built without reading the store; rolling back to it still
    # gives the session as it was created (no messages, no memory, no pending call).
    store = SqliteStore(tmp_path / "s.db")
    manager = SessionManager(store)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel()))
    session = manager.get_sync(sid)
    session.session_memory.set("note", "later")
    manager.submit_turn_sync(sid, "hello")
    start = manager.checkpointer.list_checkpoints_sync(sid)[-1]
    manager.checkpointer.rollback_sync(sid, start.ckpt_id)
    session = manager.get_sync(sid)
    assert session.current_slot.messages == [] and session.turn_index == 0
    assert session.session_memory.to_dict() == {}
    assert session.pending_tool_call() is None


def test_checkpoint_records_are_what_a_validation_of_their_fields_gives(tmp_path: Path) -> None:
    # Built from the session's own state without a validation pass: the same record (types
    # and all) as a validated one, for a start checkpoint and an after-turn one.
    manager = SessionManager(SqliteStore(tmp_path / "v.db"))
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel()))
    session = manager.get_sync(sid)
    made = [manager.checkpointer.first_meta(session)]
    manager.submit_turn_sync(sid, "hello")
    made.append(manager.checkpointer.turn_meta(session, None))
    for meta in made:
        checked = CkptMeta.model_validate(meta.model_dump())
        assert meta == checked and meta.model_fields_set == checked.model_fields_set
        assert type(meta.cost_usd) is float and type(meta.turn_index) is int
    assert (made[0].memory_version, made[0].turn_index, made[1].turn_index) == (0, 0, 1)


def _dispatch_four(store: SqliteStore) -> tuple[SessionManager, list[object], list[str]]:
    # Four tasks under the default limit in a new store: its manager, the results, and every
    # statement the dispatch ran.
    manager = SessionManager(store)
    lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
    worker = Agent(name="w", model=ScriptedModel(lambda messages: "ok"))
    statements = _writes(store)
    results = manager.dispatch_all_sync(
        lead, [(worker, f"t{i}") for i in range(4)], DispatchConfig()
    )
    store.connection.set_trace_callback(None)
    return manager, list(results), statements


def _transactions(statements: list[str]) -> list[list[str]]:
    # The statements of each write transaction, in order.
    done: list[list[str]] = []
    current: list[str] | None = None
    for statement in statements:
        if statement.startswith("BEGIN IMMEDIATE"):
            current = []
        elif statement == "COMMIT" and current is not None:
            done.append(current)
            current = None
        elif current is not None:
            current.append(" ".join(statement.split()))
    return done


def test_children_made_together_are_one_write_and_take_no_lease_of_their_own(
    tmp_path: Path,
) -> None:
    # Four tasks under a limit of four: the first makes the four children in one write
    # (rows, start checkpoints, turn leases); their turns take no lease of their own, and
    # each one's commit is one write.
    store = SqliteStore(tmp_path / "all.db")
    manager, results, statements = _dispatch_four(store)
    writes = _transactions(statements)
    creates = [w for w in writes if any(s.startswith("INSERT INTO sessions") for s in w)]
    assert len(creates) == 1
    assert sum(s.startswith("INSERT INTO sessions") for s in creates[0]) == 4
    assert len(writes) == 1 + 4
    assert not [s for s in statements if s.startswith("UPDATE sessions SET lease_holder")]
    for result in results:
        assert isinstance(result, SubTaskResult) and result.summary == "ok"
        assert _lease(store, result.child_id) is None
        labels = [c.label for c in manager.checkpointer.list_checkpoints_sync(result.child_id)]
        assert labels == [None, "start"]


def test_children_made_together_store_their_one_slot_state_once(tmp_path: Path) -> None:
    # Made in one write, at one time: their first slots have one state, so the group adds
    # one slot_states row and one name, not one per child; each child's checkpoints still
    # restore its own slot.
    store = SqliteStore(tmp_path / "states.db")
    manager = SessionManager(store)
    lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
    rows = "SELECT (SELECT count(*) FROM slot_states), (SELECT count(*) FROM names)"
    before = store.connection.execute(rows).fetchone()
    worker = Agent(name="w", model=ScriptedModel(lambda messages: "ok"))
    results = manager.dispatch_all_sync(
        lead, [(worker, f"t{i}") for i in range(4)], DispatchConfig()
    )
    states, names = store.connection.execute(rows).fetchone()
    assert states - before[0] == 1
    assert names - before[1] == 3  # the state's digest, the agent "w", its model "scripted"
    made = set()
    for result in results:
        assert isinstance(result, SubTaskResult)
        after, start = manager.checkpointer.list_checkpoints_sync(result.child_id)
        assert start.slots["main"].head_node_id is None
        assert after.slots["main"].head_node_id is not None
        assert start.slots["main"].session_id == result.child_id
        made.add(start.slots["main"].created_at)
        manager.checkpointer.rollback_sync(result.child_id, start.ckpt_id)
        assert manager.get_sync(result.child_id).current_slot.messages == []
    assert len(made) == 1


def test_a_commit_keeps_or_changes_the_parent_as_its_record_says(tmp_path: Path) -> None:
    # A turn's commit keeps the parent and leaves it out of its UPDATE (the parent index is
    # not rewritten); a record that names another parent is still stored with it, and a
    # stale version is refused either way.
    store = SqliteStore(tmp_path / "p.db")
    for sid in ("a", "b", "kid"):
        store.create_session(SessionRecord(session_id=sid, agent_name="x", parent_id=None))
    statements = _writes(store)
    version = store.commit(SessionRecord(session_id="kid", agent_name="x", parent_id=None))
    assert not any("parent_id = " in s.split("WHERE")[0] for s in statements if "UPDATE" in s)
    version = store.commit(
        SessionRecord(session_id="kid", agent_name="x", parent_id="a", version=version)
    )
    assert store.child_ids("a") == ["kid"]
    version = store.commit(
        SessionRecord(session_id="kid", agent_name="y", parent_id="a", version=version)
    )
    record = store.get_session("kid")
    assert record is not None and (record.parent_id, record.agent_name) == ("a", "y")
    with pytest.raises(StaleSessionError):
        store.commit(SessionRecord(session_id="kid", agent_name="x", parent_id="b", version=1))
    with pytest.raises(StaleSessionError):
        store.commit(SessionRecord(session_id="kid", agent_name="x", parent_id="a", version=1))
    assert store.child_ids("a") == ["kid"] and store.child_ids("b") == []
    assert store.session_version("kid") == version


def test_a_dispatch_childs_writes_are_the_statements_they_need(tmp_path: Path) -> None:
    # The group's write: one slot state (shared by the group), one read of the sessions'
    # numbers, no lookup per start checkpoint. Each child's commit: its checkpoint's parent,
    # memory version and ids in one read, the turn's and checkpoint's change rows in one INSERT,
    # and an UPDATE that leaves the parent (and its index) alone and reads what the message
    # insert looks up first.
    _, results, statements = _dispatch_four(SqliteStore(tmp_path / "kinds.db"))
    assert all(isinstance(r, SubTaskResult) for r in results)
    create, *commits = _transactions(statements)

    def count(statements: list[str], start: str) -> int:
        return sum(s.startswith(start) for s in statements)

    assert count(create, "INSERT INTO sessions") == 4
    assert count(create, "INSERT OR IGNORE INTO slot_states") == 1
    assert count(create, "SELECT session_id, key FROM session_keys") == 1
    assert count(create, "SELECT (SELECT 1 FROM checkpoint_ids LIMIT 1), (SELECT key") == 0
    assert count(create, "INSERT INTO checkpoint_rows") == 4
    assert len(commits) == 4
    for commit in commits:
        assert count(commit, "INSERT INTO change_log") == 1
        assert count(commit, "SELECT coalesce(max(version), 0) FROM memory_log") == 0
        assert count(commit, "SELECT m.version, c.ckpt") == 1
        assert count(commit, "INSERT INTO checkpoint_rows") == 1
        assert count(commit, "INSERT INTO memory_log") == 1
        (update,) = [s for s in commit if s.startswith("UPDATE sessions")]
        assert "parent_id = " not in update.split(" WHERE ")[0]
        assert count(commit, "SELECT (SELECT 1 FROM checkpoint_ids LIMIT 1)") == 0  # in the base
        assert count(commit, "INSERT OR IGNORE INTO slot_states") == 0  # the start's state
        # the message insert's lookups (text ids, the session's number) read by the UPDATE
        assert count(commit, "SELECT (SELECT 1 FROM text_ids LIMIT 1)") == 0
        # 7 statements (schema 13: no PRAGMA data_version for the call's blobs); the first
        # commit also numbers the model's name ("scripted").
        assert len(commit) == (9 if commit is commits[0] else 7)
