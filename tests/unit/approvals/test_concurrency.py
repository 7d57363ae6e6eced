"""Concurrent resumes of one interrupt — asyncio tasks and threads, on one manager or on many
managers sharing the SQLite file: exactly one wins, the others get a conflict, the tool body
runs exactly once, and the stored session ends in the winner's state."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from agcore_lab import AssistantMessage, ConflictError, SessionManager, ToolMessage, TurnResult

Bank = Any  # the conftest's Bank

TASKS = 20
THREADS = 16


@pytest.fixture
def bank(bank_factory: Callable[..., Bank], every_turn_transfers: Any) -> Bank:
    return bank_factory(every_turn_transfers)


def _one_winner(outcomes: list[Any], total: int) -> TurnResult:
    assert len(outcomes) == total
    winners = [o for o in outcomes if isinstance(o, TurnResult)]
    others = [o for o in outcomes if not isinstance(o, TurnResult)]
    assert len(winners) == 1, f"{len(winners)} resumes won"
    assert all(isinstance(o, ConflictError) for o in others), [repr(o) for o in others]
    assert all(o.to_problem()["status"] == 409 for o in others)
    assert winners[0].reply == "done"
    return winners[0]


def _settled(bank: Bank, sid: str, interrupt_id: str) -> None:
    """The stored session is the winner's: the call EXECUTED once, nothing pending, the turn
    finished — no loser undid or repeated anything."""
    records = bank.manager.store.list_pending(sid, include_resolved=True)
    assert [(r.interrupt_id, r.status) for r in records] == [(interrupt_id, "EXECUTED")]
    history = bank.stored_messages(sid)
    assert [type(m) for m in history[-2:]] == [ToolMessage, AssistantMessage]
    assert history[-1].content == "done"
    assert sum(isinstance(m, ToolMessage) for m in history) == 1


def test_concurrent_tasks_on_one_manager(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call

    async def race() -> list[Any]:
        return await asyncio.gather(
            *(
                bank.manager.resume(sid, call.run_id, call.interrupt_id, "approve")
                for _ in range(TASKS)
            ),
            return_exceptions=True,
        )

    _one_winner(asyncio.run(race()), TASKS)
    assert len(bank.runs) == 1
    _settled(bank, sid, call.interrupt_id)


def test_concurrent_tasks_on_several_managers_sharing_the_file(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    managers = [bank.new_manager() for _ in range(4)]

    async def race() -> list[Any]:
        return await asyncio.gather(
            *(
                managers[n % len(managers)].resume(sid, call.run_id, call.interrupt_id, "approve")
                for n in range(TASKS)
            ),
            return_exceptions=True,
        )

    _one_winner(asyncio.run(race()), TASKS)
    assert len(bank.runs) == 1
    _settled(bank, sid, call.interrupt_id)


def _in_threads(work: Callable[[int], TurnResult]) -> list[Any]:
    barrier = threading.Barrier(THREADS)
    outcomes: list[Any] = [None] * THREADS

    def run(n: int) -> None:
        barrier.wait(10)
        try:
            outcomes[n] = work(n)
        except Exception as exc:
            outcomes[n] = exc

    threads = [threading.Thread(target=run, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive()
    return outcomes


def test_concurrent_threads_through_the_sync_twin_of_one_manager(bank: Bank) -> None:
    for _ in range(3):
        sid, result = bank.interrupted()
        call = result.pending_tool_call
        before = len(bank.runs)
        args = (sid, call.run_id, call.interrupt_id, "approve")
        outcomes = _in_threads(lambda _n, args=args: bank.manager.resume_sync(*args))
        _one_winner(outcomes, THREADS)
        assert len(bank.runs) == before + 1
        _settled(bank, sid, call.interrupt_id)


def _race_own_managers(bank: Bank, sid: str, call: Any) -> list[Any]:
    managers: list[SessionManager] = [bank.new_manager() for _ in range(THREADS)]

    def work(n: int) -> Any:
        return asyncio.run(managers[n].resume(sid, call.run_id, call.interrupt_id, "approve"))

    try:
        return _in_threads(work)
    finally:
        for manager in managers:
            manager.store.close()  # type: ignore[attr-defined]


def test_concurrent_threads_each_with_its_own_manager_and_loop(bank: Bank) -> None:
    # Real parallelism on the file: every thread has its own connection and event loop, and
    # loads the session from the file (as a restarted kernel would) while others resume it.
    for _ in range(5):
        sid, result = bank.interrupted()
        call = result.pending_tool_call
        before = len(bank.runs)
        _one_winner(_race_own_managers(bank, sid, call), THREADS)
        assert len(bank.runs) == before + 1
        _settled(bank, sid, call.interrupt_id)


def test_concurrent_approve_and_reject_one_decision_wins(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    decisions = ["approve", "reject"] * (THREADS // 2)
    outcomes = _in_threads(
        lambda n: bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, decisions[n])
    )
    _one_winner(outcomes, THREADS)
    record = bank.manager.store.get_pending(call.interrupt_id)
    assert record.status in ("EXECUTED", "REJECTED")
    assert len(bank.runs) == (1 if record.status == "EXECUTED" else 0)
