"""Running the store's SQL on PostgreSQL: a small dialect layer over a psycopg connection.

The store's SQL helpers (``_sessions``, ``_chains``, ``_checkpoints``, ``_memory``,
``_approvals``, ``_changes``) are written against a DB-API connection with SQLite's ``?``
placeholders. :class:`PgConnection` gives a psycopg 3 connection that interface, so both
backends run the *same* statements — one place for the logic, one behaviour to test. The
translation is mechanical and cached per statement:

- ``?`` → ``%s`` and numbered ``?1`` → ``%(p1)s`` (literal ``%`` doubled);
- ``INSERT OR IGNORE INTO t ...`` → ``INSERT INTO t ... ON CONFLICT DO NOTHING``;
- ``INSERT OR REPLACE INTO t (a, b, ...) VALUES (...)`` → an upsert on ``t``'s primary key
  that updates the columns named (all of ``t``'s known columns when none are named);
- (the one statement PostgreSQL cannot take as written — a recursive query with several
  recursive terms — has a PostgreSQL text of its own beside it, picked by ``conn.dialect``).

Rows come back as :class:`Row` objects, readable by position and by column name like
``sqlite3.Row`` (and ``dict(row)`` works).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

__all__ = ["PgConnection", "Row", "translate"]

# Primary keys and columns of the tables written with INSERT OR REPLACE.
_UPSERT_TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "slots": (
        ("session_id", "slot_id"),
        (
            "session_id",
            "slot_id",
            "parent_slot_id",
            "fork_point",
            "merge_base",
            "mode",
            "head_node_id",
            "summary_override",
            "pinned_json",
            "recent_window",
            "created_at",
            "updated_at",
            "merge_strategy",
        ),
    ),
    # Knowledge graphs (agcore_lab.store._graph).
    "kg_entities": (
        ("namespace", "entity_id"),
        ("namespace", "entity_id", "name", "entity_type", "description", "properties_json"),
    ),
    "kg_relations": (
        ("namespace", "source", "relation_type", "target"),
        ("namespace", "source", "relation_type", "target", "weight", "properties_json"),
    ),
}
_REWRITES: tuple[tuple[str, str], ...] = ()
_NUMBERED = re.compile(r"\?(\d+)")
_OR_IGNORE = re.compile(r"^\s*INSERT OR IGNORE INTO", re.I)
_OR_REPLACE = re.compile(r"^\s*INSERT OR REPLACE INTO (\w+)(?:\s*\(([^)]*)\))?", re.I)


@functools.lru_cache(maxsize=512)
def translate(sql: str) -> tuple[str, bool]:
    """PostgreSQL text of a statement, and whether it takes named (numbered) parameters."""
    text = sql.replace("%", "%%")
    for old, new in _REWRITES:
        text = text.replace(old, new)
    suffix = ""
    if _OR_IGNORE.match(text):
        text = _OR_IGNORE.sub("INSERT INTO", text, count=1)
        suffix = " ON CONFLICT DO NOTHING"
    elif match := _OR_REPLACE.match(text):
        table = match.group(1)
        keys, columns = _UPSERT_TABLES[table]
        named_columns = match.group(2)
        if named_columns:  # the statement names its columns: update those
            columns = tuple(c.strip() for c in named_columns.split(","))
        head = f"INSERT INTO {table}" + (f" ({named_columns})" if named_columns else "")
        text = head + text[match.end() :]
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in keys)
        suffix = f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}"
    named = bool(_NUMBERED.search(text))
    if named:
        text = _NUMBERED.sub(lambda m: f"%(p{m.group(1)})s", text)
    else:
        text = text.replace("?", "%s")
    if suffix:
        body = text.rstrip().rstrip(";")
        if body.upper().endswith("RETURNING SEQ"):  # keep RETURNING last
            body, returning = body[: -len("RETURNING seq")], " RETURNING seq"
            text = body.rstrip() + suffix + returning
        else:
            text = body + suffix
    return text, named


def _params(named: bool, params: Sequence[Any]) -> Any:
    if named:
        return {f"p{i}": value for i, value in enumerate(params, start=1)}
    return tuple(params)


class Row:
    """One result row, by position (``row[0]``) or by column name (``row["name"]``)."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: tuple[Any, ...]) -> None:
        self._index, self._values = index, values

    def __getitem__(self, key: int | str | slice) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        """The column names."""
        return list(self._index)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=True))!r})"


class PgCursor:
    """The result of one statement, with the parts of the DB-API cursor the helpers use."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor
        self.rowcount: int = cursor.rowcount
        self.row_factory: Any = None  # accepted and ignored: rows are always Row objects
        description = cursor.description
        self._index = {c.name: i for i, c in enumerate(description)} if description else {}

    @property
    def columns(self) -> list[str]:
        """The result's column names."""
        return list(self._index)

    def fetchone(self) -> Row | None:
        values = self._cursor.fetchone()
        return Row(self._index, values) if values is not None else None

    def fetchall(self) -> list[Row]:
        return [Row(self._index, values) for values in self._cursor.fetchall()]

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


class PgConnection:
    """A psycopg 3 connection behind the ``execute`` / ``executemany`` interface of sqlite3.

    ``dialect`` lets the rare statement that must differ pick its PostgreSQL text.
    """

    dialect = "postgresql"

    def __init__(self, conn: Any) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> PgCursor:
        text, named = translate(sql)
        cursor = self.raw.cursor()
        cursor.execute(text, _params(named, params))
        return PgCursor(cursor)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if not rows:
            return
        text, named = translate(sql)
        with self.raw.cursor() as cursor:
            cursor.executemany(text, [_params(named, row) for row in rows])
