"""Approvals survive a crash of the process running the tool (kill -9, real processes)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import ConflictError, ToolMessage
from agcore_lab.store.pending import PendingToolCall

HERE = Path(__file__).parent


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(HERE))
    import _shared_workers

    return _shared_workers


def _until(check: Any, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out")


def _interrupted(workers: Any, path: Path, runs: Path) -> tuple[Any, str, PendingToolCall]:
    manager = workers.manager_for(
        str(path), workers.bank_agent(str(runs), hold=0.0, answer_latency=0.0)
    )
    sid = manager.create_sync(manager.agents["bank"])
    call = manager.submit_turn_sync(sid, "u2").pending_tool_call
    assert call is not None
    return manager, sid, call


def _kill_while(
    workers: Any, path: Path, runs: Path, sid: str, call: Any, mode: str, ready: Any
) -> None:
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(
        target=workers.approve_and_die,
        args=(str(path), str(runs), sid, call.run_id, call.interrupt_id, mode),
    )
    proc.start()
    try:
        _until(ready)
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # type: ignore[arg-type]
        proc.join(30)
    assert proc.exitcode == -signal.SIGKILL


def _race(target: Any, args: tuple[Any, ...], count: int) -> list[tuple[str, Any]]:
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, start, out)) for _ in range(count)]
    for proc in procs:
        proc.start()
    time.sleep(0.5)
    start.set()
    results = [out.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(30)
    assert all(kind != "error" for kind, _ in results), results
    return results


def _answers(manager: Any, sid: str, call: PendingToolCall) -> list[ToolMessage]:
    session = manager.store and manager.recover_sync(sid)
    return [
        m
        for m in session.messages
        if isinstance(m, ToolMessage) and m.tool_call_id == call.tool_call_id
    ]


@pytest.mark.slow
def test_a_call_whose_executor_died_is_in_doubt_and_settled_once(
    tmp_path: Path, workers: Any
) -> None:
    path, runs = tmp_path / "lab.db", tmp_path / "runs.txt"
    manager, sid, call = _interrupted(workers, path, runs)
    _kill_while(workers, path, runs, sid, call, "during", lambda: runs.exists())

    stored = manager.store.get_pending(call.interrupt_id)
    assert stored.status == "APPROVED_EXECUTING" and stored.executor
    # Once the dead executor's lease runs out, the call is reported in doubt everywhere.
    _until(lambda: manager.store.get_pending(call.interrupt_id).in_doubt, timeout=5)
    listed = manager.pending_calls(sid)
    assert [c.interrupt_id for c in listed] == [call.interrupt_id] and listed[0].in_doubt
    frame = manager.pending_dataframe()
    assert frame.loc[frame.interrupt_id == call.interrupt_id, "in_doubt"].tolist() == [True]
    session = manager.recover_sync(sid)
    assert session.pending_tool_call().in_doubt  # type: ignore[union-attr]

    # A new turn is refused, naming the call.
    with pytest.raises(ConflictError) as info:
        manager.submit_turn_sync(sid, "next", wait=3)
    assert call.interrupt_id in str(info.value) and "in doubt" in str(info.value)

    # Concurrent settles from three processes: exactly one wins, the others get 409.
    results = _race(workers.settle_call, (str(path), str(runs), sid, call.interrupt_id), 3)
    assert sorted(kind for kind, _ in results) == ["conflict", "conflict", "won"]
    assert [detail for kind, detail in results if kind == "won"] == ["done"]
    assert [detail for kind, _ in results for detail in [_] if kind == "conflict"] == [409, 409]
    with pytest.raises(ConflictError):
        manager.settle_sync(sid, call.interrupt_id)

    assert manager.store.get_pending(call.interrupt_id).status == "EXECUTED"
    answers = _answers(manager, sid, call)
    assert [m.text for m in answers] == ["it did run: sent 100"]
    assert runs.read_text().count("\n") == 1  # the tool ran once, never again
    assert manager.submit_turn_sync(sid, "and now?").status == "interrupted"  # turns go on


@pytest.mark.slow
def test_settle_without_a_result_tells_the_model_the_outcome_is_unknown(
    tmp_path: Path, workers: Any
) -> None:
    path, runs = tmp_path / "lab.db", tmp_path / "runs.txt"
    manager, sid, call = _interrupted(workers, path, runs)
    _kill_while(workers, path, runs, sid, call, "during", lambda: runs.exists())
    with pytest.raises(ConflictError):  # 409 while the dead process's leases are still live
        manager.settle_sync(sid, call.interrupt_id)
    _until(lambda: manager.store.get_pending(call.interrupt_id).in_doubt, timeout=5)
    result = manager.settle_sync(sid, call.interrupt_id, wait=3)
    assert result.reply == "done"
    answer = _answers(manager, sid, call)
    assert (
        len(answer) == 1
        and answer[0].is_error
        and "outcome of this call is unknown" in answer[0].text
    )


@pytest.mark.slow
def test_a_call_that_ran_just_before_the_crash_is_continued_exactly_once(
    tmp_path: Path, workers: Any
) -> None:
    path, runs = tmp_path / "lab.db", tmp_path / "runs.txt"
    manager, sid, call = _interrupted(workers, path, runs)
    executed = lambda: manager.store.get_pending(call.interrupt_id).status == "EXECUTED"  # noqa: E731
    _kill_while(workers, path, runs, sid, call, "after", executed)
    assert runs.read_text().count("\n") == 1

    with pytest.raises(ConflictError) as info:
        manager.submit_turn_sync(sid, "next", wait=3)
    assert call.interrupt_id in str(info.value) and "never reached the model" in str(info.value)

    # Two processes recover at once: the turn is continued once, with the stored result.
    results = _race(workers.recover_session, (str(path), str(runs), sid), 2)
    assert [kind for kind, _ in results] == ["ok", "ok"]
    answers = _answers(manager, sid, call)
    assert [m.text for m in answers] == ["sent 100 to u2"]
    session = manager.recover_sync(sid)
    assert [m.text for m in session.messages if m.role == "assistant"][-1] == "done"
    assert [m.text for m in session.messages].count("done") == 1
    assert runs.read_text().count("\n") == 1  # the tool never ran twice
    assert session.pending_tool_call() is None
