"""Worker functions for the multi-process approval race.

They live in their own plain module so that processes started with ``spawn`` can import them
by name (the test adds this directory to ``sys.path``, which spawned children inherit).
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Sequence
from typing import Any

from agcore_lab import (
    Agent,
    ConflictError,
    Message,
    Reject,
    ScriptedModel,
    SessionManager,
    Tool,
    ToolCall,
    UserMessage,
    open_store,
)
from agcore_lab.llm.scripted import Reply


def make_agent(log_path: str) -> Agent:
    """The ``bank`` agent: asked anything, it calls ``transfer`` (which needs approval) with
    the user's text as the payee; given the tool's answer, it says ``done``. Every run of the
    tool body appends one line (its payee) to ``log_path``."""

    def transfer(to: str, amount: int) -> str:
        """Move money."""
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"{to} {os.getpid()}\n")
            log.flush()
            os.fsync(log.fileno())
        return f"sent {amount} to {to}"

    def script(messages: Sequence[Message]) -> Reply:
        last = messages[-1]
        if isinstance(last, UserMessage):
            return ToolCall(name="transfer", arguments={"to": last.text, "amount": 100})
        return "done"

    tool = Tool.from_function(transfer, requires_approval=True)
    return Agent(name="bank", model=ScriptedModel(script), tools=[tool])


def race_resumes(path: str, log_path: str, index: int, inbox: Any, barrier: Any, out: Any) -> None:
    """Serve rounds until ``None`` arrives: wait at ``barrier`` with the other workers, then
    (at once, or staggered by a few milliseconds per worker) resume the round's interrupt;
    report ``(round, index, outcome, detail)`` to ``out``.

    Outcomes: ``won`` (detail: the decision and the reply), ``conflict`` (detail: the problem
    status) or ``error`` (detail: the traceback)."""
    manager = SessionManager(open_store(path), agents=[make_agent(log_path)])
    delays = (0.0, 0.001, 0.003, 0.006)
    while True:
        task = inbox.get(timeout=120)
        if task is None:
            break
        number, sid, run_id, interrupt_id, reject = task
        decision: Any = Reject(reason=f"worker {index} says no") if reject else "approve"
        try:
            barrier.wait(60)
            # Staggered starts: the late ones arrive while the winner is still writing.
            time.sleep(delays[number % len(delays)] * index)
            result = manager.resume_sync(sid, run_id, interrupt_id, decision)
            kind = "reject" if reject else "approve"
            out.put((number, index, "won", (kind, result.reply)))
        except ConflictError as err:
            out.put((number, index, "conflict", err.to_problem()["status"]))
        except BaseException:
            out.put((number, index, "error", traceback.format_exc()))
    manager.store.close()  # type: ignore[attr-defined]
