"""Worker functions for the shared-session tests (processes on one SQLite file).

They live in their own plain module so that processes started with ``spawn`` can import them
by name (the test adds this directory to ``sys.path``, which spawned children inherit).
"""

from __future__ import annotations

import os
import random
import time
import traceback
from collections.abc import Sequence
from typing import Any

from agcore_lab import (
    Agent,
    Message,
    RuntimeBundle,
    ScriptedModel,
    SessionBusyError,
    SessionManager,
    StaleSessionError,
    Tool,
    ToolCall,
    ToolMessage,
    UserMessage,
    open_store,
)
from agcore_lab.llm.scripted import Reply

LEASE_SECONDS = 1.0


def _append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as log:
        log.write(line + "\n")
        log.flush()
        os.fsync(log.fileno())


def logging_agent(asked_path: str) -> Agent:
    """An ``echo`` agent whose model appends every user text it is asked to ``asked_path``
    (once per turn: on the first call of the turn) and, for texts ending in ``+tool``, calls
    the ``add`` tool before answering."""

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def script(messages: Sequence[Message]) -> Reply:
        last = messages[-1]
        if isinstance(last, UserMessage):
            _append(asked_path, last.text)
            if last.text.endswith("+tool"):
                return ToolCall(name="add", arguments={"a": 2, "b": 3})
            return f"echo {last.text}"
        assert isinstance(last, ToolMessage)
        return f"the sum is {last.text}"

    return Agent(name="echo", model=ScriptedModel(script), tools=[add])


def manager_for(path: str, agent: Agent) -> SessionManager:
    """A manager on ``path``: a SQLite file, or a ``postgresql://...?schema=`` URL."""
    bundle = RuntimeBundle(store=open_store(path), lease_seconds=LEASE_SECONDS)
    return SessionManager(bundle=bundle, agents=[agent], watch_interval=None)


def take_turns(
    path: str,
    session_id: str,
    worker: int,
    turns: int,
    wait: float,
    asked_path: str,
    start: Any,
    out: Any,
) -> None:
    """Submit ``turns`` turns to the shared session, each as soon as the last ended (random
    pauses of 0-3 ms), and report each outcome: ``(worker, text, "ok" | "busy" | "stale")``."""
    try:
        manager = manager_for(path, logging_agent(asked_path))
        manager.recover_sync(session_id)
        start.wait(60)
        rng = random.Random(worker)
        for n in range(turns):
            text = f"w{worker}-t{n}" + ("+tool" if n % 5 == 0 else "")
            try:
                manager.submit_turn_sync(session_id, text, wait=wait)
                out.put((worker, text, "ok"))
            except SessionBusyError:
                out.put((worker, text, "busy"))
            except StaleSessionError:
                out.put((worker, text, "stale"))
            time.sleep(rng.random() * 0.003)
        out.put((worker, None, "done"))
    except BaseException:
        out.put((worker, None, traceback.format_exc()))


def bank_agent(runs_path: str, *, hold: float, answer_latency: float) -> Agent:
    """The ``bank`` agent: asked anything, it calls ``transfer`` (needs approval); the tool
    appends one line to ``runs_path`` per run and then takes ``hold`` seconds; the model's
    answer after the tool takes ``answer_latency`` seconds and says ``done``."""

    def transfer(to: str, amount: int) -> str:
        """Move money."""
        _append(runs_path, f"{to} {os.getpid()}")
        time.sleep(hold)
        return f"sent {amount} to {to}"

    def script(messages: Sequence[Message]) -> Reply:
        last = messages[-1]
        if isinstance(last, UserMessage):
            return ToolCall(name="transfer", arguments={"to": last.text, "amount": 100})
        time.sleep(answer_latency)
        return "done"

    tool = Tool.from_function(transfer, requires_approval=True)
    return Agent(name="bank", model=ScriptedModel(script), tools=[tool])


def approve_and_die(
    path: str, runs_path: str, session_id: str, run_id: str, interrupt_id: str, mode: str
) -> None:
    """Approve the call; the parent kills this process while the tool runs (``mode ==
    "during"``: the tool holds for a minute) or just after it returned (``"after"``: the
    model's next answer takes a minute)."""
    hold, latency = (60.0, 0.0) if mode == "during" else (0.0, 60.0)
    manager = manager_for(path, bank_agent(runs_path, hold=hold, answer_latency=latency))
    manager.resume_sync(session_id, run_id, interrupt_id, "approve")


def recover_session(path: str, runs_path: str, session_id: str, start: Any, out: Any) -> None:
    """Recover the session (continuing an executed call) and report the turn index."""
    try:
        manager = manager_for(path, bank_agent(runs_path, hold=0.0, answer_latency=0.0))
        start.wait(60)
        session = manager.recover_sync(session_id)
        out.put(("ok", session.turn_index))
    except BaseException:
        out.put(("error", traceback.format_exc()))


def settle_call(
    path: str, runs_path: str, session_id: str, interrupt_id: str, start: Any, out: Any
) -> None:
    """Settle the in-doubt call; report ``("won", reply)`` or ``("conflict", status)``."""
    from agcore_lab import ConflictError

    try:
        manager = manager_for(path, bank_agent(runs_path, hold=0.0, answer_latency=0.0))
        start.wait(60)
        try:
            result = manager.settle_sync(
                session_id, interrupt_id, result="it did run: sent 100", wait=5
            )
            out.put(("won", result.reply))
        except ConflictError as err:
            out.put(("conflict", err.to_problem()["status"]))
    except BaseException:
        out.put(("error", traceback.format_exc()))
