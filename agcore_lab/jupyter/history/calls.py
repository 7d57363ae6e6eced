"""Each checkpoint's model calls: how many and, for the selected one, which.

A model call is linked to the session's first checkpoint after it (``ModelCall.ckpt_id``;
ids are time-ordered). On a store with ``read_dataframe`` (``SqliteStore``,
``PostgresStore``) the counts come from the call ids alone (one small query, ~30 ms for
10,000 calls), placed between the checkpoint ids. Elsewhere they are counted from the
records: once a checkpoint exists the calls that led to it never change, so the counts are
kept and a reload reads only the newest calls (``manager.model_calls(session_id, last=n)``,
doubling ``n`` until it reaches a counted checkpoint).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter.common.text import format_cost

if TYPE_CHECKING:
    from agcore_lab.engine.manager import SessionManager
    from agcore_lab.jupyter.calls import CallInspector
    from agcore_lab.llm.call_record import ModelCall

__all__ = ["CallCounts", "TurnCalls", "call_row", "calls_of", "stamp"]


def stamp(some_id: str) -> str:
    """The time-ordered part of an id (``ckpt_…``, ``call_…``): comparable across kinds."""
    return some_id.split("_", 1)[-1]


def _status(call: ModelCall) -> str:
    if call.status == "error":
        return "error"
    if call.abandoned:
        return "abandoned"
    return "replayed" if call.replayed else "ok"


def call_row(call: ModelCall) -> dict[str, Any]:
    """One call as the history's front-end lists it."""
    return {
        "id": call.call_id,
        "kind": call.kind,
        "model": call.model,
        "tokens": f"{call.usage.prompt_tokens:,}+{call.usage.completion_tokens:,}",
        "ms": f"{call.latency_s * 1000:,.1f}",
        "cost": format_cost(call.cost),
        "status": _status(call),
    }


class CallCounts:
    """Model calls per checkpoint of one session, kept between reloads.

    Example:
        >>> from agcore_lab import Agent, ScriptedModel, SessionManager
        >>> manager = SessionManager()
        >>> sid = manager.create_sync(Agent(name="w", model=ScriptedModel()))
        >>> _ = manager.submit_turn_sync(sid, "hi")
        >>> counts = CallCounts(manager, sid)
        >>> ckpts = manager.checkpointer.list_checkpoints_sync(sid)  # newest first
        >>> from agcore_lab.aio import run_sync
        >>> found = run_sync(counts.update(ckpts))
        >>> [found[c.ckpt_id] for c in ckpts]
        [1, 0]
    """

    def __init__(self, manager: SessionManager, session_id: str) -> None:
        self.manager = manager
        self.session_id = session_id
        self.counts: dict[str, int] = {}
        self.reads = 0  # model_calls reads made (tests check it stays small)

    async def update(self, checkpoints: Sequence[Any]) -> dict[str, int]:
        """The calls of each of ``checkpoints`` (by checkpoint id)."""
        counted = self._by_ids(checkpoints)
        if counted is not None:
            return counted
        ids = {c.ckpt_id for c in checkpoints}
        self.counts = {k: v for k, v in self.counts.items() if k in ids}
        missing = ids - set(self.counts)
        if not missing:
            return dict(self.counts)
        want = 4 * len(missing) + 16
        while True:
            calls = await self.manager.model_calls(self.session_id, last=want)
            self.reads += 1
            oldest = calls[0] if calls else None
            if len(calls) < want or oldest is None or oldest.ckpt_id not in missing:
                break  # every call of the missing checkpoints is in hand
            want *= 2
        found = dict.fromkeys(missing, 0)
        for call in calls:
            if call.ckpt_id in found:
                found[call.ckpt_id] += 1
        self.counts.update(found)
        return dict(self.counts)

    def _by_ids(self, checkpoints: Sequence[Any]) -> dict[str, int] | None:
        read = getattr(self.manager.store, "read_dataframe", None)
        if read is None:
            return None
        frame = read("SELECT call_id FROM model_calls WHERE session_id = ?", [self.session_id])
        self.reads += 1
        ckpts = sorted((c.ckpt_id for c in checkpoints), key=stamp)
        stamps = [stamp(c) for c in ckpts]
        counts = dict.fromkeys(ckpts, 0)
        for call_id in frame["call_id"]:
            at = bisect.bisect_right(stamps, stamp(str(call_id)))
            if at < len(ckpts):
                counts[ckpts[at]] += 1
        return counts


async def calls_of(manager: SessionManager, meta: Any, expected: int | None) -> list[ModelCall]:
    """The model calls that led to checkpoint ``meta``, oldest first.

    They are read by turn first (a turn's calls lead to its checkpoint); when that finds fewer
    than ``expected`` (calls of a failed turn before a rollback), all the session's calls are
    read and filtered.
    """
    if expected == 0:
        return []
    sid = meta.session_id
    mine = [
        c
        for c in await manager.model_calls(sid, turn_index=meta.turn_index)
        if c.ckpt_id == meta.ckpt_id
    ]
    if expected is not None and len(mine) < expected:
        mine = [c for c in await manager.model_calls(sid) if c.ckpt_id == meta.ckpt_id]
    return mine


class TurnCalls:
    """The selected checkpoint's calls, opened in a call inspector (a mixin of
    :class:`~agcore_lab.jupyter.CheckpointTimeline`; needs its ``manager``, ``session_id``,
    ``graph``, ``selected_calls``, ``inspector``, ``inspector_box``, ``on_open_call``,
    ``show_error`` and ``set_status``)."""

    manager: Any
    session_id: str
    graph: Any
    selected_calls: list[ModelCall]
    inspector: CallInspector | None
    fork_view: Any
    inspector_box: Any
    on_open_call: Any
    show_error: Any
    set_status: Any

    def _inspect_clicked(self, change: Any) -> None:
        call_id = change["new"]
        if not call_id:
            return
        self.graph.inspect = ""  # a second click on the same call is a change again
        self.open_call(call_id)

    def open_call(self, call_id: str) -> CallInspector | None:
        """Open a :class:`~agcore_lab.jupyter.CallInspector` at ``call_id`` (one of the
        selected checkpoint's calls) below the timeline — or hand the call to
        ``on_open_call`` when one was given. Returns the inspector (``None`` otherwise)."""
        call = next((c for c in self.selected_calls if c.call_id == call_id), None)
        if call is None:
            self.show_error(
                InvalidInputError(f"no call {call_id!r} among the selected checkpoint's calls")
            )
            return None
        self.show_error(None)
        if self.on_open_call is not None:
            self.on_open_call(call)
            return None
        from agcore_lab.jupyter.calls import CallInspector

        for opened in (self.inspector, self.fork_view):
            if opened is not None:
                opened.close()
        self.fork_view = None
        self.inspector = CallInspector(self.manager, self.session_id)
        self.inspector.select(call_id)
        self.inspector_box.children = [self.inspector]
        self.set_status(f"Call {call_id} (turn {call.turn_index}) opened below.")
        return self.inspector
