"""A whole chain read straight into a compact :class:`~agcore_lab.llm.history.MessageHistory`.

The rows are those of :func:`agcore_lab.store._chains.read_chain` (the same query: on SQLite
the walk of ``chain_nodes`` by rowid, ``_sqlite_chains.chain_rows``, never the ``messages``
view, which a recursive step would scan whole; on PostgreSQL ``_CHAIN_SQL_PG``); what
changes is what they become: a plain row (no ``extra_json``, a system, user or assistant
message) goes into the history's columns as its values — no message object, no link record,
no ``datetime`` is made for it, so loading a long history costs little more than fetching
its rows and keeps little more than its text. Any other row becomes the message
``read_chain`` builds for it.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from agcore_lab.llm.history import HistoryBuilder, MessageHistory
from agcore_lab.store._chains import _CHAIN_SQL_PG, _ENTRY_COLUMNS, _built, _postgres
from agcore_lab.store._node_keys import LINK, MESSAGE, ROLE_NAMES, render
from agcore_lab.store._sqlite_chains import chain_rows

__all__ = ["read_chain_history"]


def read_chain_history(
    conn: sqlite3.Connection, head_node_id: str
) -> tuple[MessageHistory, dict[int, str]]:
    """The messages of the chain ending at ``head_node_id``, oldest first, and the chain node
    of each message placed by a link (``{index: node_id}``; every other message is its own
    node), in one recursive query."""
    if not _postgres(conn):
        return _lean_history(conn, head_node_id)
    cursor: Any = conn.execute(_CHAIN_SQL_PG, (head_node_id,))
    names = getattr(cursor, "columns", None) or [d[0] for d in cursor.description]
    at = {name: i for i, name in enumerate(names)}
    node, _, _, *fields = (at[name] for name in _ENTRY_COLUMNS)
    message_id, role, content, _, _, created_us, extra = fields
    plain_roles = HistoryBuilder.PLAIN_ROLES
    builder = HistoryBuilder()
    add_plain = builder.add_plain
    nodes: dict[int, str] = {}
    for index, row in enumerate(cursor):
        mid, kind, text = row[message_id], row[role], row[content]
        if row[node] != mid:
            nodes[index] = row[node]
        if (
            not row[extra]
            and kind in plain_roles
            and (type(text) is str or (text is None and kind == "assistant"))
            and add_plain(kind, mid, text, row[created_us])
        ):
            continue
        builder.add(_built(*(row[i] for i in fields)))
    return builder.build(), nodes


def _lean_history(
    conn: sqlite3.Connection, head_node_id: str
) -> tuple[MessageHistory, dict[int, str]]:
    """:func:`read_chain_history` on SQLite's schema 11: the chain walked over ``chain_nodes``
    by rowid (one integer lookup a step), its ids rendered from their keys."""
    plain_roles = HistoryBuilder.PLAIN_ROLES
    role_names = ROLE_NAMES
    builder = HistoryBuilder()
    add_plain = builder.add_plain
    nodes: dict[int, str] = {}
    for index, row in enumerate(chain_rows(conn, head_node_id, None)):
        node, tail, link, _, _, node_text, mnode, mtail, mtext, code, text, call, tool = row[:13]
        if mnode == node and not link:
            mid = node_text if node < 0 else render(node, tail, MESSAGE)
        else:
            nodes[index] = node_text if node < 0 else render(node, tail, LINK)
            mid = mtext if mnode < 0 else render(mnode, mtail, MESSAGE)
        kind, micros, extra = role_names[code], row[13], row[14]
        if (
            not extra
            and kind in plain_roles
            and (type(text) is str or (text is None and kind == "assistant"))
            and add_plain(kind, mid, text, micros)
        ):
            continue
        builder.add(_built(mid, kind, text, call, tool, micros, extra))
    return builder.build(), nodes
