"""The call log on a file shared by two processes (two kernels on one notebook's database)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore

WRITER = """
import sys
from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
manager = SessionManager(SqliteStore(sys.argv[1]), agents=[Agent(name="w", model=ScriptedModel())])
for i in range(3):
    manager.submit_turn_sync(sys.argv[2], f"from the other process {i}")
"""


def test_calls_made_in_another_process_are_read_here(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    manager = SessionManager(SqliteStore(db))
    sid = manager.create_sync(Agent(name="w", system_prompt="Be brief.", model=ScriptedModel()))
    manager.submit_turn_sync(sid, "from here")
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(db), sid], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    calls = manager.model_calls_sync(sid)
    assert [c.request_messages[-1].text for c in calls] == [
        "from here",
        *(f"from the other process {i}" for i in range(3)),
    ]
    # The other process's agent has no system prompt; its first request carried the history
    # this process wrote, read through the shared chains.
    assert [m.text for m in calls[0].request_messages] == ["Be brief.", "from here"]
    assert [m.text for m in calls[1].request_messages] == [
        "from here",
        "[scripted] from here",
        "from the other process 0",
    ]
    ckpts = {c.ckpt_id for c in manager.checkpointer.list_checkpoints_sync(sid)}
    assert all(c.ckpt_id in ckpts for c in calls)
    assert len({c.ckpt_id for c in calls}) == 4  # one checkpoint per turn, across processes
