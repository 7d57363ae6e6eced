"""An INSERT that leaves out the columns a row holds as NULL (SQLite).

CPython's ``sqlite3`` binds ``int``, ``float`` and ``str`` directly, but sends every other
value through its adapter lookup, and for ``None`` that lookup fails twice (no adapter is
registered for ``NoneType``, and the protocol has no ``__adapt__``: an ``AttributeError``
formatted and dropped) before it binds NULL: about ten times an ``int``'s cost. A turn's
checkpoint row, for one, has six of its 26 columns NULL. A column left out of an INSERT is
NULL all the same (these columns have no default), so :class:`NullColumns` writes each row
with the statement that names only its other columns, one statement per pattern of NULLs
(kept; there are a handful in practice).
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["NullColumns"]

_Variant = tuple[str, Callable[[Sequence[Any]], tuple[Any, ...]]]


class NullColumns:
    """``INSERT INTO table (columns) VALUES (...)`` without the ``optional`` columns a row
    has as ``None``. The optional columns must have no default (left out, they are NULL).

    Example:
        >>> from agcore_lab.store.sqlite import SqliteStore
        >>> insert = NullColumns(
        ...     "change_log",
        ...     ["session_id", "kind", "ckpt_id", "new_session_id", "origin"],
        ...     optional=["ckpt_id", "new_session_id"],
        ... )
        >>> insert.statement(("s1", "turn", None, None, "me"))[0]
        'INSERT INTO change_log (session_id, kind, origin) VALUES (?, ?, ?)'
        >>> store = SqliteStore(":memory:")
        >>> with store.transaction() as conn:
        ...     insert.execute(conn, ("s1", "checkpoint", "ckpt_1", None, "me"))
        ...     insert.executemany(conn, [("s1", "turn", None, None, "me")] * 2)
        >>> [(c.kind, c.ckpt_id) for c in store.changes_since(0)]
        [('checkpoint', 'ckpt_1'), ('turn', None), ('turn', None)]
    """

    __slots__ = ("_columns", "_nones", "_optional", "_positions", "_table", "_variants")

    def __init__(self, table: str, columns: Sequence[str], *, optional: Sequence[str]) -> None:
        self._table, self._columns = table, list(columns)
        positions = self._positions = [self._columns.index(name) for name in optional]
        self._optional: Callable[[Sequence[Any]], Any] = (
            operator.itemgetter(*positions) if len(positions) > 1 else lambda r: (r[positions[0]],)
        )
        self._nones = (None,) * len(positions)
        self._variants: dict[tuple[bool, ...], _Variant] = {}

    def _key(self, row: Sequence[Any]) -> tuple[bool, ...]:
        return tuple(map(operator.is_, self._optional(row), self._nones))

    def statement(self, row: Sequence[Any]) -> _Variant:
        """The statement for ``row`` and what picks its values out of the row."""
        return self._variant(self._key(row), row)

    def _variant(self, key: tuple[bool, ...], row: Sequence[Any]) -> _Variant:
        found = self._variants.get(key)
        if found is None:
            left = {i for i in self._positions if row[i] is None}
            kept = [i for i in range(len(self._columns)) if i not in left]
            names = ", ".join(self._columns[i] for i in kept)
            marks = ", ".join("?" * len(kept))
            pick = operator.itemgetter(*kept) if len(kept) > 1 else lambda r: (r[kept[0]],)
            found = self._variants[key] = (
                f"INSERT INTO {self._table} ({names}) VALUES ({marks})",
                pick,
            )
        return found

    def execute(self, conn: sqlite3.Connection, row: Sequence[Any]) -> None:
        """Insert one row."""
        key = tuple(map(operator.is_, self._optional(row), self._nones))  # (self._key, inline)
        sql, pick = self._variants.get(key) or self._variant(key, row)
        conn.execute(sql, pick(row))

    def executemany(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows``: in one ``executemany`` per pattern of NULLs, in their order."""
        start = 0
        while start < len(rows):
            key = self._key(rows[start])
            end = start + 1
            while end < len(rows) and self._key(rows[end]) == key:
                end += 1
            sql, pick = self._variant(key, rows[start])
            conn.executemany(sql, [pick(row) for row in rows[start:end]])
            start = end
