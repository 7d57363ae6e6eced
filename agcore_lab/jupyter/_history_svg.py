"""A session's checkpoint history as a branching graph (git-graph style), in inline SVG.

Every checkpoint has a parent (``parent_ckpt_id``): the one before it, or — for a rollback —
the checkpoint it went back to. Walking them oldest first, a checkpoint continues its parent's
lane when the parent is still that lane's tip, and starts a new lane otherwise: a rollback
visibly branches off at the turn it went back to. Forks (child sessions started from a
checkpoint here) are drawn as diamonds with a stub leading off the graph, their tooltip naming
the child session.

The x axis is the turn (ticks and a label); each lane is a row labelled with where it started.
Dots carry a ``<title>`` (hover: turn, source, label, time, tokens, cost) and a ``data-key``
with the checkpoint id. Large histories stay light: lanes are polylines, and at most
:data:`MAX_DOTS` dots are drawn (rollbacks, forks, manual checkpoints, lane ends and the
selected one always). All text is escaped; colours come from JupyterLab's CSS variables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

__all__ = ["MAX_DOTS", "MAX_LANES", "Lane", "history_svg", "lanes_of"]

MAX_DOTS = 400
MAX_LANES = 12  # more branches than this share the last row
_LEFT, _RIGHT, _TOP, _BOTTOM, _ROW = 150, 16, 10, 30, 26


@dataclass
class Lane:
    """One branch of the history: its checkpoints, oldest first, and where it came from."""

    index: int
    points: list[Any] = field(default_factory=list)  # CkptMeta
    origin: Any = None  # the checkpoint it branched off (None for the first lane)

    @property
    def label(self) -> str:
        if self.origin is None:
            return "history"
        first = self.points[0]
        if first.source == "rollback":
            return f"↩ rollback to turn {self.origin.turn_index}"
        return f"branch from turn {self.origin.turn_index}"


def lanes_of(checkpoints: Sequence[Any]) -> tuple[list[Lane], dict[str, int]]:
    """The lanes of a history (checkpoints in any order) and each checkpoint's lane."""
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


def _ticks(top: int, count: int = 8) -> list[int]:
    if top <= 0:
        return [0]
    raw = top / count
    magnitude = 10 ** (len(str(int(raw))) - 1) if raw >= 1 else 1
    step = max(1, next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw))
    return list(range(0, top + 1, step))


def _tip(c: Any, lane: Lane, forks: Sequence[str]) -> str:
    from agcore_lab.jupyter._session_html import full_time
    from agcore_lab.jupyter._svg import format_cost, format_tokens

    bits = [f"turn {c.turn_index}", c.source]
    if c.label:
        bits.append(c.label)
    bits += [
        f"{full_time(c.created_at)} UTC",
        f"{format_tokens(c.total_tokens)} tokens",
        format_cost(c.cost_usd),
        lane.label,
    ]
    if forks:
        bits.append("forked into " + ", ".join(forks))
    return " · ".join(bits) + f" · {c.ckpt_id}"


def history_svg(
    checkpoints: Sequence[Any],
    *,
    forks: Mapping[str, Sequence[str]] | None = None,
    selected: str | None = None,
    width: int = 720,
) -> str:
    """The history graph of ``checkpoints`` (``CkptMeta`` of one session).

    Args:
        checkpoints: The session's checkpoints (any order).
        forks: Child session ids by the checkpoint they were forked from.
        selected: The checkpoint to ring.
        width: The drawing's width in pixels (it scales down to fit).
    """
    if not checkpoints:
        return '<div class="agc-status">no checkpoints yet</div>'
    forks = forks or {}
    lanes, lane_of = lanes_of(checkpoints)
    rows = min(len(lanes), MAX_LANES)
    height = _TOP + _BOTTOM + _ROW * rows
    top_turn = max(1, max(c.turn_index for c in checkpoints))
    plot_w = width - _LEFT - _RIGHT

    def row(lane: int) -> float:
        return _TOP + _ROW * (min(lane, MAX_LANES - 1) + 0.5)

    # Checkpoints of one lane at one turn (a manual checkpoint after a turn) sit side by side.
    offsets: dict[str, float] = {}
    for lane in lanes:
        seen: dict[int, int] = {}
        for c in lane.points:
            k = seen.get(c.turn_index, 0)
            seen[c.turn_index] = k + 1
            offsets[c.ckpt_id] = min(k, 3) * 0.25

    def x(c: Any) -> float:
        return _LEFT + plot_w * (c.turn_index + offsets.get(c.ckpt_id, 0)) / (top_turn + 0.75)

    by_id = {c.ckpt_id: c for c in checkpoints}
    parts: list[str] = []
    base = _TOP + _ROW * rows
    parts.append(
        f'<line class="agc-axis" x1="{_LEFT}" y1="{base}" x2="{_LEFT + plot_w}" y2="{base}"/>'
    )
    for turn in _ticks(top_turn):
        tx = _LEFT + plot_w * turn / (top_turn + 0.75)
        parts.append(
            f'<line class="agc-axis" x1="{tx:.1f}" y1="{base}" x2="{tx:.1f}" y2="{base + 3}"/>'
            f'<text class="agc-tick agc-turn-tick" x="{tx:.1f}" y="{base + 13}" '
            f'text-anchor="middle">{turn:,}</text>'
        )
    parts.append(
        f'<text class="agc-tick" x="{_LEFT + plot_w / 2:.1f}" y="{height - 3}" '
        'text-anchor="middle">turn</text>'
    )
    for lane in lanes[:rows]:
        extra = len(lanes) - MAX_LANES + 1 if lane.index == MAX_LANES - 1 else 0
        label = lane.label + (f" (+{extra} more branches)" if extra > 1 else "")
        parts.append(
            f'<text class="agc-tick agc-lane-label" x="{_LEFT - 8}" y="{row(lane.index) + 3:.1f}" '
            f'text-anchor="end">{escape(label[:28])}<title>{escape(label)}</title></text>'
        )
    for lane in lanes:
        points = [f"{x(c):.1f},{row(lane.index):.1f}" for c in lane.points]
        if lane.origin is not None and lane.origin.ckpt_id in by_id:
            start = f"{x(lane.origin):.1f},{row(lane_of[lane.origin.ckpt_id]):.1f}"
            points.insert(0, start)
        css = "agc-lane" if lane.index == 0 else "agc-lane agc-lane-branch"
        parts.append(
            f'<polyline class="{css}" data-lane="{lane.index}" points="{" ".join(points)}"/>'
        )
    parts.extend(_dots(checkpoints, lanes, lane_of, forks, selected, x, row))
    return (
        f'<svg class="agc-plot agc-history" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="checkpoint history: {len(lanes)} branches">{"".join(parts)}</svg>'
    )


def _dots(
    checkpoints: Sequence[Any],
    lanes: list[Lane],
    lane_of: dict[str, int],
    forks: Mapping[str, Sequence[str]],
    selected: str | None,
    x: Callable[[Any], float],
    row: Callable[[int], float],
) -> list[str]:
    """The dots: every special checkpoint, and evenly chosen others up to MAX_DOTS."""
    parts: list[str] = []
    always = (
        {
            c.ckpt_id
            for c in checkpoints
            if c.source != "auto" or c.ckpt_id == selected or c.ckpt_id in forks
        }
        | {lane.points[-1].ckpt_id for lane in lanes}
        | {lane.points[0].ckpt_id for lane in lanes}
    )
    rest = [c for c in sorted(checkpoints, key=lambda c: c.ckpt_id) if c.ckpt_id not in always]
    room = max(0, MAX_DOTS - len(always))
    step = max(1, -(-len(rest) // room)) if room else len(rest) + 1
    dotted = always | {c.ckpt_id for c in rest[::step]}
    for c in sorted(checkpoints, key=lambda c: c.ckpt_id):
        if c.ckpt_id not in dotted:
            continue
        lane = lanes[lane_of[c.ckpt_id]]
        cx, cy = x(c), row(lane.index)
        children = list(forks.get(c.ckpt_id, ()))
        css = f"agc-pt agc-pt-{escape(c.source)}"
        if c.ckpt_id == selected:
            css += " agc-pt-selected"
        tip = escape(_tip(c, lane, children))
        if children:
            parts.append(
                f'<line class="agc-fork-stub" x1="{cx:.1f}" y1="{cy:.1f}" x2="{cx + 10:.1f}" '
                f'y2="{cy - 10:.1f}"/><path class="agc-pt agc-pt-fork agc-fork" '
                f'data-key="{escape(c.ckpt_id)}" data-children="{escape(",".join(children))}" '
                f'd="M{cx:.1f},{cy - 5:.1f} L{cx + 5:.1f},{cy:.1f} L{cx:.1f},{cy + 5:.1f} '
                f'L{cx - 5:.1f},{cy:.1f} Z"><title>{tip}</title></path>'
            )
        else:
            parts.append(
                f'<circle class="{css}" data-key="{escape(c.ckpt_id)}" cx="{cx:.1f}" '
                f'cy="{cy:.1f}" r="{4.5 if c.source != "auto" else 3.5}"><title>{tip}</title>'
                "</circle>"
            )
    return parts
