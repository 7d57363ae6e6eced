"""A session's checkpoint history as branches (git-graph style), without widgets.

Every checkpoint has a parent (``parent_ckpt_id``): the one before it, or — for a rollback —
the checkpoint it went back to. Walking them oldest first, a checkpoint continues its parent's
lane when the parent is still that lane's tip, and starts a new lane otherwise: a rollback
visibly branches off at the turn it went back to. :func:`graph_data` turns the lanes into the
compact, column-wise payload the front-end (``history.js``) draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_LANES", "SOURCES", "Lane", "graph_data", "lanes_of", "went_to"]

MAX_LANES = 12
"""Rows of the graph; more branches than this share the last row."""
SOURCES = ("auto", "manual", "rollback", "fork")
"""A checkpoint's ``source`` as a small number in the payload (its index here)."""


@dataclass
class Lane:
    """One branch of the history: its checkpoints, oldest first, and where it came from."""

    index: int
    points: list[Any] = field(default_factory=list)  # CkptMeta
    origin: Any = None  # the checkpoint it branched off (None for the first lane)

    @property
    def label(self) -> str:
        """``history``, ``↩ rollback to turn 1`` or ``branch from turn 2``."""
        if self.origin is None:
            return "history"
        first = self.points[0]
        if first.source == "rollback":
            return f"↩ rollback to turn {self.origin.turn_index}"
        return f"branch from turn {self.origin.turn_index}"


def lanes_of(checkpoints: Sequence[Any]) -> tuple[list[Lane], dict[str, int]]:
    """The lanes of a history (checkpoints in any order) and each checkpoint's lane.

    Example:
        >>> from functools import partial
        >>> from agcore_lab.store.base import CkptMeta
        >>> meta = partial(CkptMeta, session_id="s", agent_name="a")
        >>> a = meta(ckpt_id="c1", turn_index=0)
        >>> b = meta(ckpt_id="c2", turn_index=1, parent_ckpt_id="c1")
        >>> back = meta(ckpt_id="c3", turn_index=0, parent_ckpt_id="c1", source="rollback")
        >>> lanes, lane_of = lanes_of([a, b, back])
        >>> [lane.label for lane in lanes], lane_of["c3"]
        (['history', '↩ rollback to turn 0'], 1)
    """
    ordered = sorted(checkpoints, key=lambda c: c.ckpt_id)  # ids are time-ordered
    by_id = {c.ckpt_id: c for c in ordered}
    lanes: list[Lane] = []
    lane_of: dict[str, int] = {}
    tip: dict[int, str] = {}  # lane -> its newest checkpoint
    for ckpt in ordered:
        parent = by_id.get(ckpt.parent_ckpt_id or "")
        lane_index = None if parent is None else lane_of.get(parent.ckpt_id)
        if not lanes:
            lanes.append(Lane(0))
            target = 0
        elif parent is None or lane_index is None:
            target = 0  # its parent is not here (pruned, or another session's): first lane
        elif tip.get(lane_index) == parent.ckpt_id:
            target = lane_index  # the parent is its lane's tip: carry on
        else:
            target = len(lanes)  # the parent's lane moved on: a branch starts here
            lanes.append(Lane(target, origin=parent))
        lanes[target].points.append(ckpt)
        lane_of[ckpt.ckpt_id] = target
        tip[target] = ckpt.ckpt_id
    return lanes, lane_of


def went_to(meta: Any, turns: Mapping[str, int]) -> str | None:
    """A rollback's label: where it went (``↩ to turn 1``); ``None`` keeps the stored one."""
    if meta.source != "rollback" or meta.parent_ckpt_id not in turns:
        return None
    return f"↩ to turn {turns[meta.parent_ckpt_id]}"


def graph_data(
    checkpoints: Sequence[Any],
    *,
    forks: Mapping[str, Sequence[str]] | None = None,
    calls: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The history as columns, oldest first (index ``i`` is one checkpoint in every column).

    Args:
        checkpoints: ``CkptMeta`` of one session, any order.
        forks: Child session ids by the checkpoint they were forked from.
        calls: Model calls per checkpoint id (missing: not known yet, sent as ``-1``).

    Returns:
        ``ids``, ``turn``, ``x`` (the turn, nudged so checkpoints of one lane at one turn sit
        side by side), ``t`` (seconds after ``t0``, UTC epoch seconds), ``lane`` (index into
        ``lanes``), ``src`` (index into :data:`SOURCES`), ``label`` (a rollback's says where
        it went), ``slot``, ``msgs``, ``tokens``, ``cost``, ``calls``, ``forks`` (index →
        child ids) and ``lanes`` (``label``, ``origin`` index or ``-1``, ``row``: the graph
        row, at most ``MAX_LANES - 1``, so many branches share the last row).
    """
    forks = forks or {}
    calls = calls or {}
    ordered = sorted(checkpoints, key=lambda c: c.ckpt_id)
    lanes, lane_of = lanes_of(ordered)
    index = {c.ckpt_id: i for i, c in enumerate(ordered)}
    turns = {c.ckpt_id: c.turn_index for c in ordered}
    t0 = ordered[0].created_at.timestamp() if ordered else 0.0
    seen: dict[tuple[int, int], int] = {}
    x: list[float] = []
    for c in ordered:
        key = (lane_of[c.ckpt_id], c.turn_index)
        k = seen.get(key, 0)
        seen[key] = k + 1
        x.append(c.turn_index + min(k, 3) * 0.25)
    return {
        "ids": [c.ckpt_id for c in ordered],
        "turn": [c.turn_index for c in ordered],
        "x": x,
        "t0": t0,
        "t": [round(c.created_at.timestamp() - t0, 3) for c in ordered],
        "lane": [lane_of[c.ckpt_id] for c in ordered],
        "src": [SOURCES.index(c.source) if c.source in SOURCES else 0 for c in ordered],
        "label": [went_to(c, turns) or c.label or "" for c in ordered],
        "slot": [c.current_slot_id for c in ordered],
        "msgs": [c.message_count for c in ordered],
        "tokens": [c.total_tokens for c in ordered],
        "cost": [c.cost_usd for c in ordered],
        "calls": [calls.get(c.ckpt_id, -1) for c in ordered],
        "forks": {str(index[k]): list(v) for k, v in forks.items() if k in index},
        "lanes": [
            {
                "label": lane.label,
                "origin": -1 if lane.origin is None else index.get(lane.origin.ckpt_id, -1),
                "row": min(lane.index, MAX_LANES - 1),
            }
            for lane in lanes
        ],
    }
