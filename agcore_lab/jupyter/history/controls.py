"""The timeline's table order and the graph's range: sort, axis, brush, reset.

A mixin of :class:`~agcore_lab.jupyter.CheckpointTimeline`. The browser sets the same traits
(a click on a column head, the turn/time switch, a brush dragged on the graph, **Reset**);
each is also a method a user can call in a cell. The table's rows come from
:func:`~agcore_lab.jupyter.history.rows.row_order`.
"""

from __future__ import annotations

from typing import Any

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter.history.rows import AXES, row_order

__all__ = ["HistoryControls"]


class HistoryControls:
    """Sorting and brushing (needs the timeline's ``graph``, ``data``, ``_quiet``,
    ``_render`` and ``show_error``)."""

    graph: Any
    data: dict[str, Any]
    _quiet: bool
    _render: Any
    show_error: Any

    def _order(self) -> list[int]:
        if not self.data:
            return []
        g = self.graph
        return row_order(
            self.data, sort_key=g.sort_key, descending=g.descending, axis=g.axis, brush=g.brush
        )

    def _reordered(self, change: Any) -> None:
        if self._quiet:
            return
        try:
            self._render()
        except InvalidInputError as exc:
            self.show_error(exc)

    def sort(self, key: str = "", *, descending: bool = False) -> None:
        """Sort the table by a column (``turn``, ``time``, ``slot``, ``source``, ``label``,
        ``msgs``, ``tokens``, ``cost``, ``calls``); ``""`` is newest first.

        Raises:
            InvalidInputError: Unknown column (nothing changes).
        """
        row_order({"turn": []}, sort_key=key)  # raises on an unknown column
        with self.graph.hold_trait_notifications():
            self.graph.sort_key, self.graph.descending = key, descending

    def set_axis(self, axis: str) -> None:
        """Draw the graph over ``"turn"`` or ``"time"`` (the brush is cleared).

        Raises:
            InvalidInputError: Another axis (nothing changes).
        """
        if axis not in AXES:
            raise InvalidInputError(f"axis must be 'turn' or 'time', got {axis!r}")
        with self.graph.hold_trait_notifications():
            self.graph.brush = []
            self.graph.axis = axis

    def brush_range(self, low: float, high: float) -> None:
        """Brush ``[low, high]`` on the axis (turns, or seconds after the first checkpoint):
        the graph zooms to it and the table keeps the checkpoints inside."""
        self.graph.brush = sorted([float(low), float(high)])

    def reset_zoom(self) -> None:
        """Clear the brush: the whole history, every row (what **Reset** does)."""
        self.graph.brush = []
