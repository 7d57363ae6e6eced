"""``TreeTable``: a collapsible, searchable, sortable tree of rows, drawn by ``tree.js``.

The whole state is a handful of synced traits. Python sets ``columns`` and ``rows`` (the
current page only, so thousands of sessions never reach the browser at once); the browser
sets ``selected`` (a click on a row), ``query`` (the search box, debounced), ``sort_key`` /
``descending`` (a click on a column head) and ``collapsed`` (a click on a row's ▸/▾). Every
text is put in the page with ``textContent``: ids, names and statuses are never markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

__all__ = ["TreeTable"]

_HERE = Path(__file__).parent


class TreeTable(anywidget.AnyWidget):
    """A tree table.

    Traits:
        columns: ``[{"key": "agent", "label": "agent", "align": "left"}, ...]``; the first
            column carries the tree's indentation and the ▸/▾ toggles.
        rows: ``[{"id", "depth", "kids", "open", "cells": {key: text}, "tone", "title"}]``.
        selected: The selected row's id (``None``: none).
        query: The search text.
        sort_key / descending: The column siblings are sorted by (``""``: tree order).
        collapsed: Ids of rows whose children are hidden.
        empty: The text shown when there are no rows.
        tree_version: Bumped by Python whenever ``rows`` change (tests wait on it).
    """

    _esm = _HERE / "tree.js"
    _css = _HERE / "tree.css"

    columns = traitlets.List(traitlets.Dict()).tag(sync=True)
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    selected = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
    sort_key = traitlets.Unicode("").tag(sync=True)
    descending = traitlets.Bool(False).tag(sync=True)
    collapsed = traitlets.List(traitlets.Unicode()).tag(sync=True)
    empty = traitlets.Unicode("nothing to show").tag(sync=True)
    tree_version = traitlets.Int(0).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("agc-tree-table")

    def toggle(self, row_id: str) -> None:
        """Collapse an open row or open a collapsed one (what a click on ▸/▾ does)."""
        ids = list(self.collapsed)
        self.collapsed = [i for i in ids if i != row_id] if row_id in ids else [*ids, row_id]
