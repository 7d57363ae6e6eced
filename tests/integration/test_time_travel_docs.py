"""The examples docs/time-travel.md gives for the standalone checkpointer and the four-step
rollback run as written (in a scratch directory) and do what the text says."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import Agent, AgentSession, ScriptedModel, SessionManager, SqliteStore

DOC = Path(__file__).resolve().parents[2] / "docs" / "time-travel.md"


def _block(containing: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    (found,) = [b for b in blocks if containing in b]
    return found


def test_the_standalone_checkpointer_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    block = _block("checkpointer = Checkpointer(store)")
    namespace: dict[str, Any] = {}
    last = block.strip().splitlines()[-1].split("#")[0].strip()
    exec(compile(block, str(DOC), "exec"), namespace)
    assert eval(last, namespace) == 0  # the comment says: 0, a read only
    assert namespace["session"].turn_index == 1
    namespace["store"].close()


def test_the_four_step_example_equals_the_one_call_rollback(tmp_path: Path) -> None:
    agent = Agent(name="writer", model=ScriptedModel())
    manager = SessionManager(SqliteStore(tmp_path / "lab.db"), agents=[agent])
    sid = manager.create_sync(agent)
    manager.submit_turn_sync(sid, "one")
    manager.get_sync(sid).session_memory.set("k", "then")
    ckpt_id = manager.checkpoint_sync(sid, "one")
    manager.submit_turn_sync(sid, "two")
    manager.get_sync(sid).session_memory.set("k", "now")
    namespace: dict[str, Any] = {
        "manager": manager,
        "agent": agent,
        "sid": sid,
        "ckpt_id": ckpt_id,
        "AgentSession": AgentSession,
    }
    code = compile(
        _block("AgentSession.from_snapshot"), str(DOC), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )
    result = eval(code, namespace)  # a coroutine: the block awaits
    if result is not None:
        asyncio.run(result)
    now = namespace["snapshot_now"]
    assert now.turn_index == 1 and {e.key: e.value for e in now.memory} == {"k": "then"}
    assert manager.get_sync(sid) is namespace["session"]
    assert manager.checkpointer.list_checkpoints_sync(sid)[0].source == "rollback"
