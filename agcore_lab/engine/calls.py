"""Reading the model-call log of a manager's store: records, DataFrames, JSON-lines export.

``SessionManager.model_calls`` / ``model_calls_frame`` / ``export_calls`` / ``get_call``
delegate here. Every request a session sent to a model is a
:class:`~agcore_lab.llm.call_record.ModelCall` (see :mod:`agcore_lab.agent.recording`).

Example:
    >>> from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
    >>> manager = SessionManager(SqliteStore(":memory:"))
    >>> sid = manager.create_sync(Agent(name="echo", model=ScriptedModel(["hi!"])))
    >>> _ = manager.submit_turn_sync(sid, "hello")
    >>> [c.response.content for c in manager.model_calls_sync(sid)]
    ['hi!']
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agcore_lab.errors import CallNotFoundError, InvalidInputError, SessionNotFoundError
from agcore_lab.llm.call_record import ModelCall, load_calls

if TYPE_CHECKING:
    import pandas as pd

    from agcore_lab.store.base import Store

__all__ = [
    "FRAME_COLUMNS",
    "CallNotFoundError",
    "calls_frame",
    "export_calls",
    "get_call",
    "list_calls",
    "load_calls",
]

FRAME_COLUMNS = [
    "call_id",
    "session_id",
    "agent_name",
    "slot_id",
    "turn_index",
    "kind",
    "model",
    "status",
    "started_at",
    "latency_ms",
    "ttft_ms",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost_usd",
    "finish_reason",
    "message_count",
    "tool_count",
    "tool_calls",
    "streamed",
    "replayed",
    "abandoned",
    "error",
    "request_hash",
    "ckpt_id",
]


def _check_last(last: int | None) -> None:
    if last is not None and (not isinstance(last, int) or last < 1):
        raise InvalidInputError(f"last must be a positive number of calls, got {last!r}")


def list_calls(
    store: Store,
    session_id: str | None = None,
    *,
    turn_index: int | None = None,
    last: int | None = None,
) -> list[ModelCall]:
    """The calls of one session (or of all sessions), oldest first.

    Raises:
        SessionNotFoundError: ``session_id`` is not in the store.
        InvalidInputError: ``last`` is not a positive integer.
    """
    _check_last(last)
    if session_id is not None and store.get_session(session_id) is None:
        raise SessionNotFoundError("no such session in the store", session_id=session_id)
    return store.list_calls(session_id, turn_index=turn_index, last=last)


def get_call(store: Store, call_id: str) -> ModelCall:
    """One call by id.

    Raises:
        CallNotFoundError: No call with that id (list them with ``model_calls(session_id)``).
    """
    found = store.list_calls(call_id=call_id)
    if not found:
        raise CallNotFoundError(
            "no such model call; list them with manager.model_calls(session_id)",
            call_id=call_id,
        )
    return found[0]


def _row(call: ModelCall, agents: dict[str, str]) -> dict[str, Any]:
    response = call.response
    return {
        "call_id": call.call_id,
        "session_id": call.session_id,
        "agent_name": agents.get(call.session_id),
        "slot_id": call.slot_id,
        "turn_index": call.turn_index,
        "kind": call.kind,
        "model": call.model,
        "status": call.status,
        "started_at": call.started_at,
        "latency_ms": call.latency_s * 1000,
        "ttft_ms": call.ttft_s * 1000 if call.ttft_s is not None else None,
        "prompt_tokens": call.usage.prompt_tokens,
        "completion_tokens": call.usage.completion_tokens,
        "total_tokens": call.total_tokens,
        "cost_usd": call.cost,
        "finish_reason": call.finish_reason,
        "message_count": len(call.request_messages),
        "tool_count": len(call.tools),
        "tool_calls": ",".join(c.name for c in response.tool_calls) if response else "",
        "streamed": call.streamed,
        "replayed": call.replayed,
        "abandoned": call.abandoned,
        "error": call.error,
        "request_hash": call.request_hash,
        "ckpt_id": call.ckpt_id,
    }


def calls_frame(store: Store, session_id: str | None = None) -> pd.DataFrame:
    """The calls as a DataFrame, one row per call with flat columns (:data:`FRAME_COLUMNS`),
    oldest first — for latency percentiles, tokens per turn, cost per agent.

    Example:
        >>> df = manager.model_calls_frame()                          # doctest: +SKIP
        >>> df.groupby("agent_name").cost_usd.sum()                   # doctest: +SKIP
        >>> df.latency_ms.quantile([0.5, 0.95])                       # doctest: +SKIP
    """
    import pandas as pd  # lazy: keep `import agcore_lab` fast

    agents = {s.session_id: s.agent_name for s in store.list_sessions()}
    calls = list_calls(store, session_id)
    return pd.DataFrame([_row(c, agents) for c in calls], columns=FRAME_COLUMNS)


def export_calls(store: Store, path: str | Path, session_id: str | None = None) -> int:
    """Write the calls (of one session or all) to ``path`` as JSON lines, one
    :class:`ModelCall` per line, oldest first; return how many were written.

    The file is what :class:`~agcore_lab.llm.replay.ReplayModel` reads back.
    """
    calls = list_calls(store, session_id)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8") as out:
        for call in calls:
            out.write(call.model_dump_json() + "\n")
    return len(calls)
