"""A whole chain read straight into a compact :class:`~agcore_lab.llm.history.MessageHistory`.

The rows are those of :func:`agcore_lab.store._chains.read_chain` (the same query); what
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
from agcore_lab.store._chains import _CHAIN_SQL, _CHAIN_SQL_PG, _ENTRY_COLUMNS, _built, _postgres

__all__ = ["read_chain_history"]


def read_chain_history(
    conn: sqlite3.Connection, head_node_id: str
) -> tuple[MessageHistory, dict[int, str]]:
    """The messages of the chain ending at ``head_node_id``, oldest first, and the chain node
    of each message placed by a link (``{index: node_id}``; every other message is its own
    node), in one recursive query."""
    cursor: Any = conn.execute(_CHAIN_SQL_PG if _postgres(conn) else _CHAIN_SQL, (head_node_id,))
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
