"""The checkpoint history: :class:`CheckpointTimeline` and its parts.

- ``timeline.py`` — the view (loading, selection, order, the calls of a turn);
- ``actions.py`` — Rollback and Fork, asked first;
- ``lanes.py`` — branches of the history and the front-end's column-wise payload;
- ``rows.py`` — the table's columns, sort keys and the brush's filter;
- ``calls.py`` — model calls per checkpoint, read incrementally;
- ``graph.py`` + ``history.js`` / ``history.css`` — the anywidget front-end (canvas graph,
  axes, hover, zoom and brush, the virtualised sortable table).
"""

from __future__ import annotations

from agcore_lab.jupyter.history.timeline import CheckpointTimeline

__all__ = ["CheckpointTimeline"]
