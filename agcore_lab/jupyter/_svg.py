"""A small inline SVG line plot of cumulative tokens and cost, drawn without matplotlib.

The x axis is the checkpoints in the order they were taken (a time axis with one step per
checkpoint, so a burst of fast turns stays readable); tokens use the left scale, cost the right
one. A rollback shows as a drop: each point is the session's total *at* that checkpoint. All
text (tooltips, labels) is escaped; colours come from JupyterLab's CSS variables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["MAX_POINTS", "PlotPoint", "cumulative_plot", "format_cost", "format_tokens"]

MAX_POINTS = 300  # more checkpoints than this are thinned evenly (first, last, selected kept)
_PAD_LEFT, _PAD_RIGHT, _PAD_TOP, _PAD_BOTTOM = 56, 70, 10, 24
_MAX_TURN_LABELS = 16


@dataclass(frozen=True)
class PlotPoint:
    """One checkpoint on the plot."""

    key: str  # the checkpoint id (``data-key`` on its marker)
    turn: int
    tokens: int
    cost: float
    tooltip: str  # plain text; escaped when drawn
    source: str = "auto"


def format_tokens(tokens: int) -> str:
    """``12,345`` style."""
    return f"{tokens:,}"


def format_cost(cost: float | None) -> str:
    """Dollars with three significant digits: ``$0.000123``, ``$0.0421``, ``$1.23``
    (``<$0.0001`` below that); ``—`` when nothing was priced (no price is known for the
    model, or nothing ran yet).

    Example:
        >>> format_cost(0.000123456), format_cost(0.04213), format_cost(12.345), format_cost(0)
        ('$0.000123', '$0.0421', '$12.35', '—')
    """
    if cost is None or cost <= 0:
        return "—"
    if cost >= 1:
        return f"${cost:,.2f}"
    return f"${cost:.3g}" if cost >= 0.0001 else "<$0.0001"


def _thin(points: Sequence[PlotPoint], keep: str | None) -> list[tuple[int, PlotPoint]]:
    indexed = list(enumerate(points))
    if len(indexed) <= MAX_POINTS:
        return indexed
    step = (len(indexed) - 1) / (MAX_POINTS - 1)
    chosen = {round(i * step) for i in range(MAX_POINTS)} | {len(indexed) - 1}
    chosen |= {i for i, p in indexed if p.key == keep}
    return [indexed[i] for i in sorted(chosen)]


def _scale(value: float, top: float, height: float) -> float:
    return _PAD_TOP + height - (value / top * height if top > 0 else 0.0)


def cumulative_plot(
    points: Sequence[PlotPoint],
    *,
    selected: str | None = None,
    width: int = 640,
    height: int = 150,
) -> str:
    """An ``<svg>`` with two lines (tokens, cost) over the checkpoints, oldest on the left.

    Args:
        points: The checkpoints, oldest first.
        selected: The key of the point to ring.
        width: Width in pixels.
        height: Height in pixels.

    Returns:
        The SVG markup (an empty-state note when there are no points).
    """
    if not points:
        return '<div class="agc-plot agc-plot-empty agc-status">no checkpoints yet</div>'
    shown = _thin(points, selected)
    inner_w = width - _PAD_LEFT - _PAD_RIGHT
    inner_h = height - _PAD_TOP - _PAD_BOTTOM
    top_tokens = max(p.tokens for p in points) or 1
    top_cost = max(p.cost for p in points)
    last = max(len(points) - 1, 1)

    def x(i: int) -> float:
        return _PAD_LEFT + (inner_w * i / last if len(points) > 1 else inner_w / 2)

    token_xy = [(x(i), _scale(p.tokens, top_tokens, inner_h)) for i, p in shown]
    cost_xy = [(x(i), _scale(p.cost, top_cost, inner_h)) for i, p in shown]
    parts = [
        f'<svg class="agc-plot" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="cumulative tokens and cost per checkpoint">',
        f'<line class="agc-axis" x1="{_PAD_LEFT}" y1="{_PAD_TOP + inner_h}" '
        f'x2="{_PAD_LEFT + inner_w}" y2="{_PAD_TOP + inner_h}"/>',
        f'<line class="agc-axis" x1="{_PAD_LEFT}" y1="{_PAD_TOP}" x2="{_PAD_LEFT}" '
        f'y2="{_PAD_TOP + inner_h}"/>',
        f'<text class="agc-tick agc-tokens-label" x="{_PAD_LEFT - 4}" y="{_PAD_TOP + 9}" '
        f'text-anchor="end">{escape(format_tokens(top_tokens))}</text>',
        f'<text class="agc-tick" x="{_PAD_LEFT - 4}" y="{_PAD_TOP + inner_h}" '
        f'text-anchor="end">0</text>',
        f'<text class="agc-tick agc-cost-label" x="{_PAD_LEFT + inner_w + 4}" '
        f'y="{_PAD_TOP + 9}">{escape(format_cost(top_cost))}</text>',
        f'<text class="agc-tick" x="{_PAD_LEFT - 10}" y="{height - 6}" text-anchor="end">'
        f"turn</text>",
    ]
    # Every point's turn when they fit, else the first and the last.
    labelled = shown if len(shown) <= _MAX_TURN_LABELS else [shown[0], shown[-1]]
    for i, p in labelled:
        parts.append(
            f'<text class="agc-tick" x="{x(i):.1f}" y="{height - 6}" text-anchor="middle">'
            f"{p.turn}</text>"
        )
    if len(shown) > 1:
        for css, xy in (("agc-line-tokens", token_xy), ("agc-line-cost", cost_xy)):
            coords = " ".join(f"{a:.1f},{b:.1f}" for a, b in xy)
            parts.append(f'<polyline class="{css}" points="{coords}"/>')
    for (_, p), (tx, ty) in zip(shown, token_xy, strict=True):
        ring = " agc-pt-selected" if p.key == selected else ""
        radius = 5 if ring else 3
        parts.append(
            f'<circle class="agc-pt agc-pt-{escape(p.source)}{ring}" data-key="{escape(p.key)}" '
            f'cx="{tx:.1f}" cy="{ty:.1f}" r="{radius}"><title>{escape(p.tooltip)}</title></circle>'
        )
    legend_y = _PAD_TOP + inner_h / 2
    parts.append(
        f'<text class="agc-tick agc-tokens-label" x="{_PAD_LEFT + inner_w + 4}" '
        f'y="{legend_y:.1f}">— tokens</text>'
        f'<text class="agc-tick agc-cost-label" x="{_PAD_LEFT + inner_w + 4}" '
        f'y="{legend_y + 14:.1f}">┅ cost</text></svg>'
    )
    return "".join(parts)
