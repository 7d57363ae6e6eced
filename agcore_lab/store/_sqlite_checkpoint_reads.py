"""Reading checkpoint rows of schema 11 (SQLite) in the old columns, or as lean rows.

:func:`lean_query` is the one query of a listing or a lookup by id: the lean
``checkpoint_rows`` by their keys (the session index, rowid order), newest first — or, while
some checkpoint id is kept as text, the ``checkpoints`` view (:func:`view_rows`), in text
order, as the old table was read. :func:`old_rows` gives the rows in the old columns
(``_checkpoint_rows.COLUMNS``), their text columns written a column at a time
(``_lean_frame.shaped_rows``); the listing builds its records from the lean rows themselves
(``_lean_listing``).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from agcore_lab.store._gc_pause import paused_collector
from agcore_lab.store._lean_frame import shaped_rows
from agcore_lab.store._node_keys import session_key, split_id
from agcore_lab.store._sqlite_checkpoints import CKPT, checkpoint_key

__all__ = ["keyed_rows", "lean_names", "lean_query", "old_rows", "rows_of", "view_rows"]

_LEAN_SELECT = (
    "SELECT c.ckpt, c.tail, s.session_id, c.parent, c.parent_tail, c.turn_index, c.created, "
    "c.created_text, c.label, c.source, c.message_count, c.prompt_tokens, c.completion_tokens, "
    "c.cost_usd, c.agent, c.current_slot, c.last_summary_turn, c.memory_version, c.head, "
    "c.head_tail, c.state, c.model, c.requests, c.slots_json, c.spend_json, c.pending_json "
    "FROM checkpoint_rows c JOIN session_keys s ON s.key = c.session"
)
# One session's rows: no join for every row; its id (NULL here) is the one the caller asked
# for, filled in by the caller (``rows_of``).
_LEAN_SELECT_ONE = _LEAN_SELECT.replace("s.session_id", "NULL AS session_id", 1).replace(
    " JOIN session_keys s ON s.key = c.session", ""
)
_OLD_SELECT = (
    "SELECT session_id, ckpt_id, parent_ckpt_id, turn_index, created_at, label, source, "
    "message_count, prompt_tokens, completion_tokens, cost_usd, agent_name, current_slot_id, "
    "last_summary_turn, memory_version, slots_json, spend_json, pending_json "
    "FROM checkpoints_keyed"
)


def lean_query(
    conn: sqlite3.Connection,
    session_id: str | None,
    before: str | int | None,
    limit: int | None,
    ckpt_id: str | None = None,
) -> tuple[str, list[Any]] | bool:
    """The query of :func:`old_rows`' lean rows (``_LEAN_SELECT``'s columns, newest first),
    ``False`` when no row can match, ``True`` when the ``checkpoints`` view must be read (an
    id kept as text, or ``before`` an id of another form)."""
    if conn.execute("SELECT 1 FROM checkpoint_ids LIMIT 1").fetchone() is not None:
        return True
    conditions: list[str] = ["1 = 1"]
    params: list[Any] = []
    if ckpt_id is not None:
        pair = split_id(ckpt_id, CKPT)
        if pair is None:
            return False
        conditions.append("c.ckpt = ? AND c.tail = ?")
        params.extend(pair)
    if session_id:
        session = session_key(conn, session_id, create=False)
        if session is None:
            return False
        conditions.append("c.session = ?")
        params.append(session)
    if isinstance(before, str):
        pair = split_id(before, CKPT)
        if pair is None:  # compared as text with ids of another form: the view decides
            return True
        conditions.append("(c.ckpt < ? OR (c.ckpt = ? AND c.tail < ?))")
        params.extend((pair[0], pair[0], pair[1]))
    elif isinstance(before, int):
        conditions.append("c.turn_index < ?")
        params.append(before)
    select = _LEAN_SELECT_ONE if session_id else _LEAN_SELECT
    sql = f"{select} WHERE {' AND '.join(conditions)} ORDER BY c.ckpt DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return sql, params


def old_rows(
    conn: sqlite3.Connection,
    session_id: str | None,
    before: str | int | None,
    limit: int | None,
    ckpt_id: str | None = None,
) -> list[tuple[Any, ...]]:
    """Checkpoint rows in the old columns (``_checkpoint_rows.COLUMNS``), newest first: of
    one session (or all), older than ``before``, at most ``limit`` — or the one ``ckpt_id``.

    The lean rows are read by their keys (the session index, rowid order) and their text
    columns written here; only while some checkpoint id is kept as text does the view read
    them, in text order, as the old table did.
    """
    query = lean_query(conn, session_id, before, limit, ckpt_id)
    if query is True:
        return view_rows(conn, session_id, before, limit, ckpt_id)
    if query is False:
        return []
    # Tens of thousands of tuples, none of them garbage: the cyclic collector would rescan
    # them while they are made (as in ``_checkpoint_rows.read_checkpoints``).
    with paused_collector():
        rows = rows_of(conn, query, session_id)
        if not rows:
            return []
        return shaped_rows(rows, lean_names(conn))


def rows_of(
    conn: sqlite3.Connection, query: tuple[str, list[Any]], session_id: str | None
) -> list[tuple[Any, ...]]:
    """The rows of a :func:`lean_query` (of one session: its id filled in)."""
    rows = conn.execute(*query).fetchall()
    if session_id and rows:
        rows = [(r[0], r[1], session_id, *r[3:]) for r in rows]
    return rows


def lean_names(conn: sqlite3.Connection) -> dict[int, str]:
    """Every name's number (agents, slots, models, slot-state digests)."""
    return dict(conn.execute("SELECT key, name FROM names").fetchall())


def view_rows(
    conn: sqlite3.Connection,
    session_id: str | None,
    before: str | int | None,
    limit: int | None,
    ckpt_id: str | None,
) -> list[tuple[Any, ...]]:
    conditions: list[str] = ["1 = 1"]
    params: list[Any] = []
    if ckpt_id is not None:
        key = checkpoint_key(conn, ckpt_id)
        if key is None:
            return []
        conditions.append("ckpt_key = ? AND ckpt_id = ?")
        params.extend((key, ckpt_id))
    if session_id:
        conditions.append("session_key = ?")
        params.append(session_key(conn, session_id, create=False) or 0)
    if isinstance(before, str):
        conditions.append("ckpt_id < ?")
        params.append(before)
    elif isinstance(before, int):
        conditions.append("turn_index < ?")
        params.append(before)
    sql = f"{_OLD_SELECT} WHERE {' AND '.join(conditions)} ORDER BY ckpt_id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [tuple(r) for r in conn.execute(sql, params).fetchall()]


def keyed_rows(conn: sqlite3.Connection, keys: list[int]) -> list[tuple[Any, ...]]:
    """The old columns of the checkpoints of lean ``keys``, in that order, as the
    ``checkpoints`` view shows them: for rows whose lean values are not of the types a write
    leaves (the view shows what SQL makes of them; validation then decides)."""
    found = {}
    for key in keys:
        row = conn.execute(f"{_OLD_SELECT} WHERE ckpt_key = ?", (key,)).fetchone()
        found[key] = tuple(row)
    return [found[key] for key in keys]
