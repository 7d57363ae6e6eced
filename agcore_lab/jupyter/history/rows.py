"""What the history table shows and in which order, without widgets: columns, sort keys, the
brush's range filter.

The front-end draws the rows Python orders (``order``: indices into the oldest-first columns
of :func:`~agcore_lab.jupyter.history.lanes.graph_data`), so sorting and filtering are
methods a user can call in a cell and test without a browser.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agcore_lab.errors import InvalidInputError

__all__ = ["AXES", "COLUMNS", "SORT_KEYS", "row_order"]

AXES = ("turn", "time")
"""The graph's x axis: the turn, or the time the checkpoint was taken."""

COLUMNS: list[dict[str, str]] = [
    {"key": "turn", "label": "turn", "align": "right"},
    {"key": "time", "label": "time (UTC)", "align": "left"},
    {"key": "slot", "label": "slot", "align": "left"},
    {"key": "source", "label": "source", "align": "left"},
    {"key": "label", "label": "label", "align": "left"},
    {"key": "msgs", "label": "messages", "align": "right"},
    {"key": "tokens", "label": "tokens", "align": "right"},
    {"key": "cost", "label": "cost", "align": "right"},
    {"key": "calls", "label": "calls", "align": "right"},
]
"""The table's columns (``key`` is what :meth:`CheckpointTimeline.sort` takes)."""

_Key = Callable[[dict[str, Any], int], Any]
SORT_KEYS: dict[str, _Key] = {
    "turn": lambda d, i: (d["turn"][i], i),
    "time": lambda d, i: i,  # ids, and so the columns, are time-ordered
    "slot": lambda d, i: (d["slot"][i], i),
    "source": lambda d, i: (d["src"][i], i),
    "label": lambda d, i: (d["label"][i].lower(), i),
    "msgs": lambda d, i: (d["msgs"][i], i),
    "tokens": lambda d, i: (d["tokens"][i], i),
    "cost": lambda d, i: (d["cost"][i], i),
    "calls": lambda d, i: (d["calls"][i], i),
}
"""How rows are ordered by each column (ties: oldest first)."""


def row_order(
    data: dict[str, Any],
    *,
    sort_key: str = "",
    descending: bool = False,
    axis: str = "turn",
    brush: Sequence[float] = (),
) -> list[int]:
    """The rows to show, as indices into ``data``'s columns, in display order.

    Args:
        data: :func:`~agcore_lab.jupyter.history.lanes.graph_data`'s payload.
        sort_key: A column key; ``""`` is the default order, newest first.
        descending: Reverse the column's order.
        axis: What ``brush`` is in: ``"turn"`` or ``"time"`` (seconds after ``data["t0"]``).
        brush: ``(low, high)`` on that axis: only checkpoints inside it; empty for all.

    Raises:
        InvalidInputError: Unknown column or axis, or a brush that is not two numbers.

    Example:
        >>> data = {"turn": [0, 1, 2], "x": [0, 1, 2], "t": [0.0, 5.0, 9.0]}
        >>> row_order(data), row_order(data, sort_key="turn"), row_order(data, brush=(1, 2))
        ([2, 1, 0], [0, 1, 2], [2, 1])
    """
    if sort_key and sort_key not in SORT_KEYS:
        known = ", ".join(SORT_KEYS)
        raise InvalidInputError(f"no column {sort_key!r} to sort by; columns: {known}")
    if axis not in AXES:
        raise InvalidInputError(f"axis must be 'turn' or 'time', got {axis!r}")
    rows = range(len(data["turn"]))
    if brush:
        if len(brush) != 2:
            raise InvalidInputError(f"a brush is (low, high), got {list(brush)!r}")
        low, high = sorted(float(b) for b in brush)
        column = data["x"] if axis == "turn" else data["t"]
        rows = [i for i in rows if low <= column[i] <= high]  # type: ignore[assignment]
    if not sort_key:
        return sorted(rows, reverse=not descending)
    key = SORT_KEYS[sort_key]
    return sorted(rows, key=lambda i: key(data, i), reverse=descending)
