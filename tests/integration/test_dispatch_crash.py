"""A dispatch killed mid-way (kill -9, a real process) leaves every child it made consistent
and recoverable: children are created in groups with their turn leases (one made ahead while
the lanes run), so this checks that no group leaves half a child."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import Agent, ScriptedModel

HERE = Path(__file__).parent


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(HERE))
    import _dispatch_workers

    return _dispatch_workers


def _until(check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError("timed out")


def test_children_of_a_killed_dispatch_are_whole_and_recoverable(
    tmp_path: Path, workers: Any
) -> None:
    path = tmp_path / "crash.db"
    manager = workers.manager_for(str(path), latency=0.0)
    lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=workers.dispatch_forever, args=(str(path), lead, 400))
    proc.start()
    try:  # killed while children are being made and committed
        _until(lambda: len(manager.store.child_ids(lead)) >= 12)
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # type: ignore[arg-type]
        proc.join(30)
    assert proc.exitcode == -signal.SIGKILL
    children = manager.children_sync(lead)
    assert 12 <= len(children) < 400
    done = 0
    time.sleep(workers.LEASE + 0.1)  # the killed process's leases run out by themselves
    for child in children:
        record = manager.store.get_session(child)
        assert record is not None and record.parent_id == lead
        labels = [c.label for c in manager.checkpointer.list_checkpoints_sync(child)]
        memory = manager.child_memory(child)
        # Whole: made (its start checkpoint with it), or made and its turn committed with its
        # checkpoint and result summary — nothing in between.
        if record.turn_index == 0:
            assert labels == ["start"] and memory == {}
        else:
            done += 1
            assert record.turn_index == 1 and labels == [None, "start"]
            assert memory == {"result_summary": "ok"}
        # Recoverable: another process takes it up and runs a turn in it.
        session = manager.recover_sync(child)
        assert session.submit_turn_sync("again").reply == "ok"
    # At most two groups (2 x max_concurrency) are made before their turns end: the lanes'
    # own and the one made ahead for the tasks after them.
    assert done >= len(children) - 2 * 2
