"""``HistoryGraph``: the branching history, its axes and the sortable table, drawn in the
browser by one anywidget ESM assembled from ``format.js`` (helpers), ``canvas.js`` (the
graph), ``table.js`` (the table and the calls) and ``history.js`` (layout and wiring) — plain
files shipped in the wheel, joined here with no build step — styled by ``history.css``.

The whole state is a handful of synced traits. Python sets ``data`` (every checkpoint, as
columns), ``order`` (the table's rows, already filtered and sorted), ``calls`` (the selected
checkpoint's model calls) and ``disabled``; the browser sets ``selected`` (a click on a dot or
a row), ``sort_key`` / ``descending`` (a click on a column head), ``axis`` (turn or time),
``brush`` (a range dragged on the graph), ``inspect`` (a click on a call's Inspect) and
``open_session`` (a click on a fork's Open).
Every text goes into the page with ``textContent``: labels, ids and names are never markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from agcore_lab.jupyter.history.rows import COLUMNS

__all__ = ["HistoryGraph"]

_HERE = Path(__file__).parent
_PARTS = ("format.js", "canvas.js", "table.js", "history.js")  # history.js exports render


def _esm() -> str:
    return "\n".join((_HERE / part).read_text(encoding="utf-8") for part in _PARTS)


class HistoryGraph(anywidget.AnyWidget):
    """The history graph and table of one session.

    Traits:
        data: :func:`~agcore_lab.jupyter.history.lanes.graph_data`'s payload.
        columns: The table's columns (``[{"key", "label", "align"}]``).
        order: The table's rows, as indices into ``data``'s columns.
        selected: The selected checkpoint id (``None``: none).
        sort_key / descending: The column the table is sorted by (``""``: newest first).
        axis: ``"turn"`` or ``"time"``.
        brush: ``[low, high]`` on the axis (the table keeps the checkpoints inside), or ``[]``.
        calls: The selected checkpoint's model calls
            (``[{"id", "kind", "model", "tokens", "ms", "cost", "status"}]``).
        inspect: Set by the browser to a call id when its Inspect button is clicked.
        open_session: Set by the browser to a fork's child session id when its Open is clicked.
        disabled: The session is gone: nothing to select or act on.
        version: Bumped by Python whenever ``data`` changes (tests wait on it).
    """

    _esm = _esm()
    _css = _HERE / "history.css"

    data = traitlets.Dict().tag(sync=True)
    columns = traitlets.List(traitlets.Dict(), default_value=COLUMNS).tag(sync=True)
    order: traitlets.List[int] = traitlets.List().tag(sync=True)  # unvalidated: 10,000 ints
    selected = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    sort_key = traitlets.Unicode("").tag(sync=True)
    descending = traitlets.Bool(False).tag(sync=True)
    axis = traitlets.Unicode("turn").tag(sync=True)
    brush = traitlets.List(traitlets.Float()).tag(sync=True)
    calls = traitlets.List(traitlets.Dict()).tag(sync=True)
    inspect = traitlets.Unicode("").tag(sync=True)
    open_session = traitlets.Unicode("").tag(sync=True)
    disabled = traitlets.Bool(False).tag(sync=True)
    version = traitlets.Int(0).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("agc-history-graph")
