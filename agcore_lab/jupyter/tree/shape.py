"""The session tree browser's shape: sort siblings, search, collapse and reveal.

A mixin of :class:`~agcore_lab.jupyter.SessionTreeBrowser`. The browser's table reports the
search text, the sort column and the collapsed rows as trait changes; these methods recompute
which rows are shown (in Python: only one page reaches the browser) and are what a user calls
in a cell.
"""

from __future__ import annotations

from typing import Any

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter.tree._html import TreeRow, flatten
from agcore_lab.jupyter.tree.rows import SORT_KEYS
from agcore_lab.jupyter.tree.rows import open_rows as _open_rows
from agcore_lab.jupyter.tree.rows import search_rows as _search

__all__ = ["TreeShape"]


class TreeShape:
    """Search, sort and collapse (the browser owns the table, the rows and the lock)."""

    tree_table: Any
    rows: list[TreeRow]
    all_rows: list[TreeRow]
    selected: str | None
    page: int
    page_size: int
    _lock: Any
    _quiet: bool
    _render: Any
    _index: Any
    _find: Any

    def _reshape(self) -> None:
        """Recompute the shown rows from the tree: sort siblings, then search or collapse."""
        table = self.tree_table
        key = SORT_KEYS.get(table.sort_key)
        roots = getattr(self, "_all_roots", [])
        self.all_rows = flatten(roots, order=None if key is None else (key, table.descending))
        query = table.query.strip().lower()
        if query:
            self.rows = _search(self.all_rows, query)
        else:
            self.rows = _open_rows(self.all_rows, set(table.collapsed))

    def search(self, query: str) -> None:
        """Show only sessions whose id or agent contains ``query`` (with their ancestors);
        ``""`` shows the whole tree again. (What typing in the search box does.)"""
        self.tree_table.query = query

    def sort(self, column: str, *, descending: bool = False) -> None:
        """Sort siblings by ``column`` (``agent``, ``id``, ``turns``, ``tokens``, ``cost``,
        ``status``, ``updated``, ``created``; ``""``: tree order). (What a click on a column head
        does.)

        Raises:
            InvalidInputError: Unknown column.
        """
        if column and column not in SORT_KEYS:
            raise InvalidInputError(
                f"cannot sort by {column!r}; columns: {', '.join(sorted(SORT_KEYS))}"
            )
        with self.tree_table.hold_trait_notifications():
            self.tree_table.sort_key = column
            self.tree_table.descending = descending

    def toggle(self, session_id: str) -> None:
        """Collapse or expand a session's children (what a click on ▸/▾ does)."""
        self.tree_table.toggle(session_id)

    def _reshaped(self, _change: Any) -> None:
        with self._lock:
            self._reshape()
            self.page = 0
            index = None if self.selected is None else self._index(self.selected)
            if index is not None:
                self.page = index // self.page_size
            self._render()

    def _collapsed(self, _change: Any) -> None:
        with self._lock:
            self._reshape()
            self._render()

    def _reveal(self, session_id: str) -> None:
        ancestors = set()
        node = self._find(session_id)
        while node is not None and node.parent_id is not None:
            ancestors.add(node.parent_id)
            node = self._find(node.parent_id)
        self._quiet = True
        try:
            with self.tree_table.hold_trait_notifications():
                self.tree_table.query = ""
                self.tree_table.collapsed = [
                    i for i in self.tree_table.collapsed if i not in ancestors
                ]
        finally:
            self._quiet = False
        self._reshape()
