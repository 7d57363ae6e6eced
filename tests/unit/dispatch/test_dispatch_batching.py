"""Children created together: ``create_children`` (one write, turn leases reserved in it) and
what ``dispatch_all`` does with it — leases, late turns, cancellation between creation and
turn."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agcore_lab import (
    Agent,
    DispatchConfig,
    DispatchProgress,
    InvalidInputError,
    Message,
    RuntimeBundle,
    ScriptedModel,
    SessionBusyError,
    SessionManager,
    SessionNotFoundError,
    SqliteStore,
    SubTaskError,
    SubTaskResult,
)
from agcore_lab.aio import run_sync


def _manager(tmp_path: Path, **bundle: float) -> tuple[SessionManager, str]:
    store = SqliteStore(tmp_path / "b.db")
    manager = SessionManager(bundle=RuntimeBundle(store=store, **bundle))  # type: ignore[arg-type]
    lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
    return manager, lead


def _lease(manager: SessionManager, sid: str) -> object:
    row = manager.store.connection.execute(  # type: ignore[attr-defined]
        "SELECT lease_holder FROM sessions WHERE session_id = ?", (sid,)
    ).fetchone()
    return row[0]


def _statements(manager: SessionManager) -> list[str]:
    statements: list[str] = []
    manager.store.connection.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    return statements


def test_children_made_together_are_each_as_create_child_makes_one(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    events: list[tuple[str, str]] = []
    manager.add_listener(lambda e: events.append((e.kind, e.session_id)))
    worker = Agent(name="w", model=ScriptedModel(["one", "two"]))
    kids = manager.create_children_sync(lead, [worker, worker], metadata=[{"n": 1}, {"n": 2}])
    assert manager.children_sync(lead) == kids
    for n, kid in enumerate(kids, start=1):
        record = manager.store.get_session(kid)
        assert record is not None and record.parent_id == lead and record.metadata == {"n": n}
        (start,) = manager.checkpointer.list_checkpoints_sync(kid)
        assert (start.label, start.turn_index) == ("start", 0)
        assert manager.live(kid) is not None
        assert _lease(manager, kid) is None  # not reserved unless asked
    assert [kind for kind, sid in events if sid in kids] == ["created"] * 2 + ["checkpoint"] * 2
    assert manager.submit_turn_sync(kids[0], "go").reply == "one"


def test_bad_calls_make_no_child(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    worker = Agent(name="w", model=ScriptedModel())
    with pytest.raises(InvalidInputError, match="one per agent"):
        manager.create_children_sync(lead, [worker, worker], metadata=[{}])
    with pytest.raises(SessionNotFoundError):
        manager.create_children_sync("ses_nope", [worker])
    assert manager.children_sync(lead) == [] and len(manager.store.list_sessions()) == 1


def test_a_reserved_child_is_refused_to_others_until_its_turn_or_a_write_of_its_own(
    tmp_path: Path,
) -> None:
    manager, lead = _manager(tmp_path)
    worker = Agent(name="w", model=ScriptedModel(["done"]))
    one, two = run_sync(manager.create_children(lead, [worker, worker], reserve=True))
    other = SqliteStore(tmp_path / "b.db")  # another process's view of the file
    for kid in (one, two):
        with pytest.raises(SessionBusyError):
            other.acquire_lease(kid, "elsewhere:1:1", ttl=5)
    # Its first turn uses the reservation: no lease write of its own, and it ends free.
    statements = _statements(manager)
    assert manager.submit_turn_sync(one, "go").reply == "done"
    manager.store.connection.set_trace_callback(None)  # type: ignore[attr-defined]
    assert not [s for s in statements if s.startswith("UPDATE sessions SET lease_holder")]
    assert _lease(manager, one) is None
    assert other.acquire_lease(one, "elsewhere:1:1", ttl=5) == 1
    # A write outside a turn gives the reservation up with it.
    manager.live(two).write_metadata("note", "x")  # type: ignore[union-attr]
    assert _lease(manager, two) is None
    assert other.acquire_lease(two, "elsewhere:1:1", ttl=5) == 1


def test_a_turn_started_late_takes_its_lease_again(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path, lease_seconds=0.4)
    worker = Agent(name="w", model=ScriptedModel(["late"]))
    (kid,) = run_sync(manager.create_children(lead, [worker], reserve=True))
    time.sleep(0.25)  # past half the lease's lifetime: the reservation is not trusted
    statements = _statements(manager)
    assert manager.submit_turn_sync(kid, "go").reply == "late"
    manager.store.connection.set_trace_callback(None)  # type: ignore[attr-defined]
    assert [s for s in statements if s.startswith("UPDATE sessions SET lease_holder")]
    assert _lease(manager, kid) is None


def test_a_child_made_ahead_but_never_started_is_marked_cancelled_and_free(
    tmp_path: Path,
) -> None:
    # Limit 2: task a makes its child and b's; when b takes its child, c's and d's are made
    # ahead; when a ends, c starts (d waits for the limit). Cancelled then: d's child never
    # started its turn; it is marked cancelled and its reserved lease is given up, as b's
    # and c's (running) are.
    manager, lead = _manager(tmp_path)

    class Paced(ScriptedModel):
        async def complete(self, messages, *, tools=()):  # type: ignore[no-untyped-def]
            if messages[-1].text != "a":
                await asyncio.sleep(10)
            return await super().complete(messages, tools=tools)

    worker = Agent(name="w", model=Paced(lambda m: "done"))
    tasks = [(worker, t) for t in ("a", "b", "c", "d")]

    async def scenario() -> None:
        job = asyncio.ensure_future(
            manager.dispatch_all(lead, tasks, DispatchConfig(max_concurrency=2))
        )
        for _ in range(500):
            await asyncio.sleep(0.01)
            if len(manager.store.child_ids(lead)) == 4:
                break
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    run_sync(scenario())
    progress = manager.last_dispatch
    assert progress is not None
    assert progress.statuses == ["completed", "cancelled", "cancelled", "cancelled"]
    assert progress.child_ids[3] is None  # its task never started
    kids = manager.children_sync(lead)
    assert len(kids) == 4
    for kid in kids[1:]:
        record = manager.store.get_session(kid)
        assert record is not None and record.metadata["dispatch"] == "cancelled"
        assert record.turn_index == 0 and _lease(manager, kid) is None
    assert manager.child_memory(kids[0]) == {"result_summary": "done"}


def test_tasks_admitted_after_their_parent_was_destroyed_fail_without_a_child(
    tmp_path: Path,
) -> None:
    manager, lead = _manager(tmp_path)

    def destroys_the_parent(messages: object) -> str:
        manager.store.delete_session(lead)  # another writer removes the parent meanwhile
        return "first"

    worker = Agent(name="w", model=ScriptedModel(destroys_the_parent))
    first, *rest = manager.dispatch_all_sync(
        lead, [(worker, "a"), (worker, "b"), (worker, "c")], DispatchConfig(max_concurrency=1)
    )
    assert first.response == "first"  # type: ignore[union-attr]
    for failed in rest:
        assert isinstance(failed, SubTaskError) and failed.child_id is None
        assert isinstance(failed.error, SessionNotFoundError)
    progress = manager.last_dispatch
    assert progress is not None
    assert progress.statuses == ["completed", "failed", "failed"] and progress.failed == 2
    assert manager.store.child_ids(lead) == [first.child_id]  # type: ignore[union-attr]


def test_a_lane_starts_its_next_task_before_the_children_that_ended_with_its_own_go_on(
    tmp_path: Path,
) -> None:
    # Limit 2, equal latencies: a's and b's models answer in the same loop iteration. The
    # lane that ran a starts c at once (its model call comes before b's end), instead of
    # after every child that ended with a (which made each wave wait for the whole wave).
    manager, lead = _manager(tmp_path)
    order: list[str] = []

    class Noted(ScriptedModel):
        async def complete(self, messages, *, tools=()):  # type: ignore[no-untyped-def]
            order.append(f"call {messages[-1].text}")
            return await super().complete(messages, tools=tools)

    worker = Agent(name="w", model=Noted(lambda m: "ok", latency=0.05))

    def noted(progress: DispatchProgress) -> None:
        for index, status in enumerate(progress.statuses):
            if status == "completed" and f"end {'abcd'[index]}" not in order:
                order.append(f"end {'abcd'[index]}")

    results = manager.dispatch_all_sync(
        lead, [(worker, t) for t in "abcd"], DispatchConfig(max_concurrency=2), on_progress=noted
    )
    assert all(isinstance(r, SubTaskResult) for r in results)
    assert order[:6] == ["call a", "call b", "end a", "call c", "end b", "call d"]


def test_the_next_group_is_made_while_the_lanes_wait_for_their_models(tmp_path: Path) -> None:
    # Limit 2, 6 tasks: a's lane makes a's and b's children; when b takes the last child made
    # ahead, c's and d's are made in one write before a's model answers (not by the lane that
    # needs them, in front of the others), and so on: one write per group, no lease writes.
    manager, lead = _manager(tmp_path)
    seen: dict[str, int] = {}

    def answer(messages: list[Message]) -> str:
        seen[messages[-1].text] = len(manager.store.child_ids(lead))
        return "ok"

    worker = Agent(name="w", model=ScriptedModel(answer, latency=0.05))
    statements = _statements(manager)
    results = manager.dispatch_all_sync(
        lead, [(worker, t) for t in "abcdef"], DispatchConfig(max_concurrency=2)
    )
    manager.store.connection.set_trace_callback(None)  # type: ignore[attr-defined]
    assert all(isinstance(r, SubTaskResult) for r in results)
    assert seen["a"] == seen["b"] == 4  # c's and d's made before a and b answered
    assert seen["c"] == seen["d"] == 6
    creates, fresh = 0, False  # write transactions that insert sessions
    for statement in statements:
        if statement.startswith("BEGIN IMMEDIATE"):
            fresh = True
        elif fresh and statement.startswith("INSERT INTO sessions"):
            creates, fresh = creates + 1, False
    assert creates == 3 and sum(s.startswith("INSERT INTO sessions") for s in statements) == 6
    assert not [s for s in statements if s.startswith("UPDATE sessions SET lease_holder")]


def test_a_group_made_ahead_that_fails_fails_its_tasks_when_they_are_admitted(
    tmp_path: Path,
) -> None:
    # Limit 2: b takes the last child made ahead, and its model removes the parent before
    # the next group (c's and d's children) is made: that write fails, c and d fail without
    # a child when admitted, a and b complete.
    manager, lead = _manager(tmp_path)

    class Destroys(ScriptedModel):
        async def complete(self, messages, *, tools=()):  # type: ignore[no-untyped-def]
            if messages[-1].text == "b":
                manager.store.delete_session(lead)  # another writer, meanwhile
            return await super().complete(messages, tools=tools)

    worker = Agent(name="w", model=Destroys(lambda m: "ok", latency=0.05))
    results = manager.dispatch_all_sync(
        lead, [(worker, t) for t in "abcd"], DispatchConfig(max_concurrency=2)
    )
    assert [type(r).__name__ for r in results] == [
        "SubTaskResult",
        "SubTaskResult",
        "SubTaskError",
        "SubTaskError",
    ]
    for failed in results[2:]:
        assert isinstance(failed, SubTaskError) and failed.child_id is None
        assert isinstance(failed.error, SessionNotFoundError)
    progress = manager.last_dispatch
    assert progress is not None
    assert progress.statuses == ["completed", "completed", "failed", "failed"]
    assert sorted(manager.store.child_ids(lead)) == sorted(r.child_id for r in results[:2])
