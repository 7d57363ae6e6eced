"""Sub-agent dispatch: results, concurrency, memory flow, failures, cancellation, streaming."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from agcore_lab import (
    Agent,
    ChildCreated,
    Completed,
    DispatchConfig,
    DispatchError,
    DispatchProgress,
    Message,
    ScriptedModel,
    SessionManager,
    SessionNotFoundError,
    SqliteStore,
    SubTaskError,
    SubTaskResult,
    TextDelta,
)
from agcore_lab.aio import run_sync, submit


def test_acceptance_snippet_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    from agcore_lab import Agent, DispatchConfig, ScriptedModel, SessionManager, SqliteStore

    manager = SessionManager(SqliteStore("lab.db"))
    lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
    worker = Agent(name="worker", model=ScriptedModel(lambda messages: "ok", latency=0.05))
    results = manager.dispatch_all_sync(
        lead, [(worker, f"task {i}") for i in range(20)], DispatchConfig(max_concurrency=5)
    )
    assert [r.response for r in results] == ["ok"] * 20
    assert len(manager.children_sync(lead)) == 20
    # The limit was reached and never exceeded.
    assert manager.last_dispatch is not None and manager.last_dispatch.peak_running == 5


def _manager(tmp_path: Path) -> tuple[SessionManager, str]:
    manager = SessionManager(SqliteStore(tmp_path / "d.db"))
    lead = manager.create_sync(Agent(name="lead", model=ScriptedModel(["lead reply"])))
    return manager, lead


def test_results_come_back_in_input_order_with_usage_and_summary(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    echo = Agent(name="echo", model=ScriptedModel(lambda m: f"done: {m[-1].text}"))
    results = manager.dispatch_all_sync(lead, [(echo, f"job {i}") for i in range(6)])
    assert [r.response for r in results] == [f"done: job {i}" for i in range(6)]
    first = results[0]
    assert isinstance(first, SubTaskResult)
    assert first.usage.requests == 1 and first.summary == "done: job 0"
    assert manager.child_memory(first.child_id)["result_summary"] == "done: job 0"
    assert manager.parent_sync(first.child_id) == lead
    assert manager.tree_sync(lead).to_dataframe()["depth"].max() == 1


def test_one_failure_keeps_its_place_and_the_others_finish(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)

    def flaky(messages: Sequence[Message]) -> str:
        if "boom" in messages[-1].text:
            raise RuntimeError("model exploded")
        return "fine"

    worker = Agent(name="flaky", model=ScriptedModel(flaky))
    results = manager.dispatch_all_sync(lead, [(worker, t) for t in ["a", "boom", "c"]])
    assert [getattr(r, "response", None) for r in results] == ["fine", None, "fine"]
    failed = results[1]
    assert isinstance(failed, SubTaskError) and failed.status == "failed"
    assert isinstance(failed.error, RuntimeError) and failed.child_id is not None
    assert manager.sessions_dataframe().shape[0] == 4


def test_timeout_marks_only_that_task(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    slow = Agent(name="slow", model=ScriptedModel(lambda m: "late", latency=0.5))
    quick = Agent(name="quick", model=ScriptedModel(lambda m: "quick"))
    results = manager.dispatch_all_sync(
        lead, [(quick, "a"), (slow, "b")], DispatchConfig(timeout=0.1)
    )
    assert isinstance(results[0], SubTaskResult)
    assert isinstance(results[1], SubTaskError) and results[1].status == "timed_out"
    stored = manager.store.get_session(results[1].child_id or "")
    assert stored is not None and stored.metadata["dispatch"] == "timed_out"


def test_concurrency_limit_is_respected(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    running, peak, lock = [0], [0], threading.Lock()

    class Counting(ScriptedModel):
        async def complete(self, messages, *, tools=()):  # type: ignore[no-untyped-def]
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            try:
                return await super().complete(messages, tools=tools)
            finally:
                with lock:
                    running[0] -= 1

    worker = Agent(name="counted", model=Counting(lambda m: "ok", latency=0.02))
    results = manager.dispatch_all_sync(
        lead, [(worker, f"t{i}") for i in range(12)], DispatchConfig(max_concurrency=3)
    )
    assert len(results) == 12 and peak[0] == 3


def test_memory_bridging_snapshot_and_prompt(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    parent = manager.get_sync(lead)
    parent.session_memory.set("topic", "solar panels")
    parent.session_memory.set("budget", 1000)
    seen: list[str] = []

    def reads_prompt(messages: Sequence[Message]) -> str:
        seen.append(messages[0].text)
        return "ok"

    worker = Agent(name="w", system_prompt="You research.", model=ScriptedModel(reads_prompt))
    none = manager.dispatch_sync(lead, worker, "t", DispatchConfig())
    assert "result_summary" in manager.child_memory(none.child_id)
    assert "topic" not in manager.child_memory(none.child_id)

    only = manager.dispatch_sync(lead, worker, "t", DispatchConfig(bridge_keys=["topic"]))
    assert manager.child_memory(only.child_id)["topic"] == "solar panels"
    assert "budget" not in manager.child_memory(only.child_id)
    assert "topic" in seen[-1] and "solar panels" in seen[-1] and "budget" not in seen[-1]

    every = manager.dispatch_sync(lead, worker, "t", DispatchConfig(bridge_keys=[]))
    assert {"topic", "budget"} <= set(manager.child_memory(every.child_id))

    off = manager.dispatch_sync(
        lead, worker, "t", DispatchConfig(bridge_keys=[], inherit_session_memory=False)
    )
    assert "topic" not in manager.child_memory(off.child_id)


def test_parent_writes_after_dispatch_do_not_leak_in(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    parent = manager.get_sync(lead)
    parent.session_memory.set("fact", "before")
    gate = threading.Event()

    def waits(messages: Sequence[Message]) -> str:
        gate.wait(5)
        return "ok"

    worker = Agent(name="w", model=ScriptedModel(waits))
    future = submit(manager.dispatch(lead, worker, "t", DispatchConfig(bridge_keys=[])))
    time.sleep(0.2)
    parent.session_memory.set("fact", "after")
    gate.set()
    result = future.result(10)
    assert manager.child_memory(result.child_id)["fact"] == "before"


def test_siblings_share_through_the_parent_namespace(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    shared = manager.shared_memory(lead, "notes")
    shared.set("seed", 1)
    worker = Agent(name="w", model=ScriptedModel(lambda m: "ok"))
    results = manager.dispatch_all_sync(lead, [(worker, "a"), (worker, "b")])
    for r in results:
        assert isinstance(r, SubTaskResult)
        manager.shared_memory(lead, "notes").set(r.child_id, r.response)
    seen = manager.shared_memory(lead, "notes").to_dict()
    assert seen["seed"] == 1 and {r.child_id for r in results} <= set(seen)  # type: ignore[union-attr]
    assert all(k.startswith("shared:notes:") for k in manager.child_memory(lead) if k != "x")


def test_cancelling_dispatch_all_keeps_the_finished_ones(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)

    def speed(messages: Sequence[Message]) -> str:
        return "fast" if "fast" in messages[-1].text else "slow"

    class Paced(ScriptedModel):
        async def complete(self, messages, *, tools=()):  # type: ignore[no-untyped-def]
            if "slow" in messages[-1].text:
                await asyncio.sleep(10)
            return await super().complete(messages, tools=tools)

    worker = Agent(name="paced", model=Paced(speed))
    tasks = [(worker, "fast 1"), (worker, "fast 2"), (worker, "slow 1"), (worker, "slow 2")]

    async def scenario() -> None:
        job = asyncio.ensure_future(manager.dispatch_all(lead, tasks))
        await asyncio.sleep(0.5)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    run_sync(scenario())
    progress = manager.last_dispatch
    assert progress is not None
    assert progress.statuses == ["completed", "completed", "cancelled", "cancelled"]
    for child_id in progress.child_ids[:2]:
        assert child_id is not None
        checkpoints = manager.checkpointer.list_checkpoints_sync(child_id)
        assert checkpoints[0].turn_index == 1  # the finished child's turn was checkpointed
    children = manager.children_sync(lead)
    marks = {manager.store.get_session(c).metadata.get("dispatch") for c in children}  # type: ignore[union-attr]
    assert marks == {None, "cancelled"}  # a completed child is known by its result_summary
    for child_id in progress.child_ids[:2]:
        assert "result_summary" in manager.child_memory(child_id or "")


def test_progress_callback_sees_every_stage(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    worker = Agent(name="w", model=ScriptedModel(lambda m: "ok", latency=0.02))
    snapshots: list[tuple[int, int, int]] = []
    manager.dispatch_all_sync(
        lead,
        [(worker, str(i)) for i in range(4)],
        DispatchConfig(max_concurrency=2),
        on_progress=lambda p: snapshots.append((p.waiting, p.running, p.done)),
    )
    assert snapshots[0] == (3, 1, 0) and snapshots[-1] == (0, 0, 4)
    assert max(running for _, running, _ in snapshots) == 2


def test_progress_names_each_child_as_soon_as_it_exists(tmp_path: Path) -> None:
    # A watcher (the DispatchMonitor) must see a child while its turn runs, not only after.
    manager, lead = _manager(tmp_path)
    worker = Agent(name="w", model=ScriptedModel(lambda m: "ok", latency=0.05))
    seen: list[tuple[str, str | None, int]] = []

    def watch(p: DispatchProgress) -> None:
        child = p.child_ids[0]
        record = manager.store.get_session(child) if child else None
        seen.append((p.statuses[0], child, record.turn_index if record else -1))

    manager.dispatch_all_sync(lead, [(worker, "one")], on_progress=watch)
    running_with_child = [s for s in seen if s[0] == "running" and s[1] is not None]
    assert running_with_child and running_with_child[0][2] == 0  # named before its turn ended
    assert seen[-1][0] == "completed" and seen[-1][1] == running_with_child[0][1]


def test_dispatch_stream_events_in_order(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    worker = Agent(name="w", model=ScriptedModel(["streamed answer"], chunk_size=4))
    events = list(manager.dispatch_stream_sync(lead, worker, "go"))
    assert isinstance(events[0], ChildCreated)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "streamed answer"
    assert isinstance(events[-1], Completed) and events[-1].result.response == "streamed answer"

    broken = Agent(name="b", model=ScriptedModel(lambda m: 1 / 0))  # type: ignore[arg-type,return-value]
    events = list(manager.dispatch_stream_sync(lead, broken, "go"))
    assert isinstance(events[-1], DispatchError) and "ZeroDivisionError" in events[-1].error


def test_unknown_parent_and_bad_tasks(tmp_path: Path) -> None:
    manager, _ = _manager(tmp_path)
    worker = Agent(name="w")
    with pytest.raises(SessionNotFoundError):
        manager.dispatch_sync("ses_nope", worker, "t")
    results = manager.dispatch_all_sync("ses_nope", [(worker, "t")])
    assert isinstance(results[0], SubTaskError) and results[0].child_id is None
    with pytest.raises(ValueError, match="pairs"):
        manager.dispatch_all_sync("ses_nope", [(worker,)])  # type: ignore[list-item]


def test_two_children_of_one_dispatch_all_exchange_a_value(tmp_path: Path) -> None:
    # Both run at once; each leaves its value in the siblings' shared area, then waits for
    # the other's — only possible if both handles name the same area.
    from agcore_lab import Tool, ToolCall
    from agcore_lab.engine.dispatch_types import current_shared_memory

    manager, lead = _manager(tmp_path)

    def swapper(mine: str, theirs: str) -> Agent:
        async def swap() -> str:
            """Give my value, take the sibling's."""
            shared = current_shared_memory()
            shared.set(mine, f"from {mine}")
            for _ in range(200):
                got = shared.get(theirs)
                if got is not None:
                    return str(got)
                await asyncio.sleep(0.01)
            return "nothing came"

        model = ScriptedModel(
            lambda m: ToolCall(name="swap", arguments={}) if m[-1].role == "user" else m[-1].text
        )
        return Agent(name=f"swap-{mine}", model=model, tools=[Tool.from_function(swap)])

    results = manager.dispatch_all_sync(
        lead, [(swapper("a", "b"), "swap"), (swapper("b", "a"), "swap")]
    )
    assert [r.response for r in results] == ["from b", "from a"]  # type: ignore[union-attr]
    # The default area is named after the parent: shared:{parent_session_id}:...
    stored = {k: v for k, v in manager.child_memory(lead).items() if k.startswith("shared:")}
    assert stored == {f"shared:{lead}:a": "from a", f"shared:{lead}:b": "from b"}
    for r in results:
        handle = manager.dispatcher.shared_memory_for(r.child_id)  # type: ignore[union-attr]
        assert handle.namespace == lead and handle.to_dict() == {"a": "from a", "b": "from b"}


def test_a_configured_shared_namespace_is_used(tmp_path: Path) -> None:
    from agcore_lab import Tool, ToolCall
    from agcore_lab.engine.dispatch_types import current_shared_memory

    manager, lead = _manager(tmp_path)

    def note(text: str) -> str:
        """Leave a note."""
        current_shared_memory().set("note", text)
        return "noted"

    def read() -> str:
        """Read the note."""
        return str(current_shared_memory().get("note"))

    def agent(name: str, call: ToolCall) -> Agent:
        model = ScriptedModel(lambda m: call if m[-1].role == "user" else m[-1].text)
        return Agent(
            name=name, model=model, tools=[Tool.from_function(note), Tool.from_function(read)]
        )

    writer = agent("writer", ToolCall(name="note", arguments={"text": "meet at 5"}))
    reader = agent("reader", ToolCall(name="read", arguments={}))
    results = manager.dispatch_all_sync(
        lead,
        [(writer, "write"), (reader, "read")],
        DispatchConfig(max_concurrency=1, shared_namespace="team"),
    )
    assert [r.response for r in results] == ["noted", "meet at 5"]  # type: ignore[union-attr]
    assert manager.child_memory(lead)["shared:team:note"] == "meet at 5"
    assert manager.shared_memory(lead, "team").get("note") == "meet at 5"
    # Outside a dispatched child's turn there is no current area.
    from agcore_lab import InvalidInputError

    with pytest.raises(InvalidInputError, match="shared_memory_for"):
        current_shared_memory()
    with pytest.raises(InvalidInputError, match="not created by a dispatch"):
        manager.dispatcher.shared_memory_for(lead)


def test_a_streamed_child_has_one_checkpoint_written_at_finalize(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    worker = Agent(name="w", model=ScriptedModel(["streamed answer"], chunk_size=4))
    events = list(manager.dispatch_stream_sync(lead, worker, "go"))
    child = events[0].child_id  # type: ignore[union-attr]
    (only,) = manager.checkpointer.list_checkpoints_sync(child)
    assert only.label == "finalize" and only.source == "auto" and only.turn_index == 1
    snapshot = manager.checkpointer.export_snapshot_sync(only.ckpt_id)
    assert {e.key for e in snapshot.memory} >= {"result_summary"}  # finalize came after it
    # Later turns of the child are checkpointed as usual again.
    manager.submit_turn_sync(child, "more")
    assert len(manager.checkpointer.list_checkpoints_sync(child)) == 2
    # A failed stream: still exactly one checkpoint; a non-streamed child keeps two.
    broken = Agent(name="b", model=ScriptedModel(lambda m: 1 / 0))  # type: ignore[arg-type,return-value]
    failed = list(manager.dispatch_stream_sync(lead, broken, "go"))
    assert len(manager.checkpointer.list_checkpoints_sync(failed[0].child_id)) == 1  # type: ignore[union-attr]
    plain = manager.dispatch_sync(lead, Agent(name="p", model=ScriptedModel(["x"])), "go")
    assert [c.label for c in manager.checkpointer.list_checkpoints_sync(plain.child_id)] == [
        None,
        "start",
    ]


def test_an_abandoned_stream_still_finalizes_its_child(tmp_path: Path) -> None:
    manager, lead = _manager(tmp_path)
    worker = Agent(name="w", model=ScriptedModel(["a long streamed answer"], chunk_size=2))

    async def abandon() -> str:
        stream = manager.dispatch_stream(lead, worker, "go")
        first = await stream.__anext__()
        await stream.__anext__()  # one delta, then walk away
        await stream.aclose()  # type: ignore[attr-defined]
        return first.child_id  # type: ignore[union-attr,no-any-return]

    child = run_sync(abandon())
    (only,) = manager.checkpointer.list_checkpoints_sync(child)
    assert only.label == "finalize" and only.turn_index == 0  # the turn was not committed


def test_a_summary_the_child_wrote_itself_is_kept_and_a_failure_gets_none(
    tmp_path: Path,
) -> None:
    # The dispatch's own summary goes with the child's turn commit: only when the child has
    # none, and never for a turn that failed after its commit (too many tool rounds).
    from agcore_lab import Tool, ToolCall

    manager, lead = _manager(tmp_path)

    def own(child_id: str) -> None:
        child = manager.live(child_id)
        assert child is not None
        child.session_memory.set("result_summary", "my own words", {"written_by": "child"})

    worker = Agent(name="w", model=ScriptedModel(["the long answer"]))
    result = run_sync(manager.dispatcher.dispatch(lead, worker, "go", on_child=own))
    assert result.summary == "my own words"
    (entry,) = manager.store.memory_entries(result.child_id)
    assert (entry.value, entry.metadata) == ("my own words", {"written_by": "child"})

    def again() -> str:
        """Always asks for more."""
        return "more"

    looping = Agent(
        name="loop",
        model=ScriptedModel(lambda m: ToolCall(name="again", arguments={})),
        tools=[Tool.from_function(again)],
        max_tool_rounds=1,
    )
    with pytest.raises(SubTaskError) as failed:
        manager.dispatch_sync(lead, looping, "loop")
    assert failed.value.child_id is not None
    assert manager.child_memory(failed.value.child_id) == {}
