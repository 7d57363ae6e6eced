"""Message chains in SQLite: the rows, the inserts, the recursive read and the safe delete.

A message row is also the chain node where the message was first placed (``parent_id``,
``depth``), so the common case — a turn appending new messages — writes one row per message and
nothing else. Only a message placed again elsewhere (a merge appending another slot's messages)
gets a row in ``message_links``. Content is stored once, in a flat column; ``extra_json`` holds
the other fields only when a message has any (tool calls, metadata, ...).

Rows are kept lean because there is one per message: ``created_us`` is the creation time in
microseconds since the epoch, UTC (``pd.to_datetime(df.created_us, unit="us", utc=True)``), and
``messages`` has no index on ``session_id`` (deleting a session scans; turns never do).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from agcore_lab.errors import StorageError
from agcore_lab.ids import new_id
from agcore_lab.llm.messages import (
    AssistantMessage,
    Message,
    MessageAdapter,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from agcore_lab.store import _sqlite_chains as lean
from agcore_lab.store._trusted import build_all, fields_of, trusted
from agcore_lab.store.base import LinkRecord, SlotRecord

__all__ = [
    "delete_session_chains",
    "follow_renamed",
    "insert_chain",
    "read_chain",
    "read_chain_tail",
]

_COLUMNS = {"id", "role", "content", "created_at"}
_TOOL_COLUMNS = {"tool_call_id", "name"}


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _extra_json(message: Message) -> str | None:
    # The message's fields other than its columns that do not hold their defaults, as JSON
    # (``None``: none). A message whose every such field holds its default (the usual case)
    # is not dumped to find that out.
    defaults = _EXTRA_DEFAULTS.get(type(message))
    fields = fields_of(message)
    if defaults is not None and all(fields.get(name, _ABSENT) == d for name, d in defaults):
        return None
    exclude = _COLUMNS | (_TOOL_COLUMNS if isinstance(message, ToolMessage) else set())
    extra = message.model_dump(mode="json", exclude=exclude, exclude_defaults=True)
    return json.dumps(extra, ensure_ascii=False, separators=(",", ":")) if extra else None


_ABSENT = object()
# Each message kind's fields kept in extra_json, with their defaults (a default factory's
# value: ``metadata`` is ``{}``), as ``exclude_defaults`` compares them.
_EXTRA_DEFAULTS: dict[type[Message], tuple[tuple[str, Any], ...]] = {
    kind: tuple(
        (name, field.default_factory() if field.default_factory is not None else field.default)  # type: ignore[call-arg]
        for name, field in kind.model_fields.items()
        if name not in _COLUMNS | (_TOOL_COLUMNS if kind is ToolMessage else set())
    )
    for kind in (SystemMessage, UserMessage, AssistantMessage, ToolMessage)
}


def _row(message: Message, session_id: str, home: LinkRecord | None) -> tuple[Any, ...]:
    fields = fields_of(message)
    tool = isinstance(message, ToolMessage)
    return (
        fields["id"],
        session_id,
        home.parent_node_id if home else None,
        home.depth if home else None,
        fields["role"],
        fields.get("content"),
        fields["tool_call_id"] if tool else None,
        fields["name"] if tool else None,
        _micros(fields["created_at"]),
        _extra_json(message),
    )


# One set of given fields for all messages (and links) read from plain rows (see trusted()).
_MESSAGE_SET = {"id", "role", "content", "created_at"}
_TOOL_SET = _MESSAGE_SET | {"tool_call_id", "name"}
_LINK_SET = {"node_id", "parent_node_id", "message_id", "depth"}

_ROLES = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
_KINDS: dict[str, type[Message]] = {
    "system": SystemMessage,
    "user": UserMessage,
    "assistant": AssistantMessage,
    "tool": ToolMessage,
}


def _message(row: sqlite3.Row) -> Message:
    return _built(
        row["message_id"],
        row["role"],
        row["content"],
        row["tool_call_id"],
        row["tool_name"],
        row["created_us"],
        row["extra_json"],
    )


def _built(
    message_id: str,
    role: str,
    content: str | None,
    tool_call_id: str | None,
    tool_name: str | None,
    created_us: int,
    extra_json: str | None,
) -> Message:
    role = _ROLES.get(role, role)  # one string per role, not one per row
    fields: dict[str, Any] = {
        "id": message_id,
        "role": role,
        "content": content,
        "created_at": _EPOCH + timedelta(microseconds=created_us),
    }
    if role == "tool":
        fields.update(tool_call_id=tool_call_id, name=tool_name)
    if not extra_json:
        # Flat columns only: the row's own values in their fields' types, built without a
        # validation pass (they were validated on the way in; see store/_trusted.py).
        kind = _KINDS.get(role)
        if kind is not None and (content is not None or kind is AssistantMessage):
            return trusted(kind, fields, _TOOL_SET if role == "tool" else _MESSAGE_SET)
        return MessageAdapter.validate_python(fields)
    data: dict[str, Any] = json.loads(extra_json)
    data.update(fields)
    return MessageAdapter.validate_python(data)


def _placements(
    conn: sqlite3.Connection, message_ids: Sequence[str]
) -> dict[str, tuple[str | None, int]]:
    """Where the stored, placed messages among ``message_ids`` are at home."""
    if not _postgres(conn):
        return lean.placements(conn, message_ids)
    found: dict[str, tuple[str | None, int]] = {}
    for start in range(0, len(message_ids), 500):
        batch = message_ids[start : start + 500]
        rows = conn.execute(
            "SELECT message_id, parent_id, depth FROM messages WHERE depth IS NOT NULL "
            f"AND message_id IN ({','.join('?' * len(batch))})",
            tuple(batch),
        )
        found.update((r[0], (r[1], r[2])) for r in rows)
    return found


def _rehome(
    conn: sqlite3.Connection, new_ids: set[str], links: Sequence[LinkRecord]
) -> tuple[list[LinkRecord], dict[str, str]]:
    """Give a link of its own to each home link of a sent message that is stored already at
    another place (a snapshot imported into the database it came from), and make the later
    links follow. Returns the links and the renamed nodes."""
    stored = _placements(
        conn,
        [lk.message_id for lk in links if lk.node_id == lk.message_id and lk.message_id in new_ids],
    )
    renamed: dict[str, str] = {}
    fixed: list[LinkRecord] = []
    for link in links:
        parent = link.parent_node_id
        parent = renamed.get(parent, parent) if parent is not None else None
        home = stored.get(link.message_id) if link.node_id == link.message_id else None
        if home is not None and home != (parent, link.depth):
            renamed[link.node_id] = new_id("node")
            link = link.model_copy(update={"node_id": renamed[link.node_id]})
        if parent != link.parent_node_id:
            link = link.model_copy(update={"parent_node_id": parent})
        fixed.append(link)
    return fixed, renamed


def follow_renamed(slot: SlotRecord, renamed: dict[str, str]) -> SlotRecord:
    """``slot`` with its head moved along a renaming returned by :func:`insert_chain`."""
    head = slot.head_node_id
    if head is None or head not in renamed:
        return slot
    return slot.model_copy(update={"head_node_id": renamed[head]})


def insert_chain(
    conn: sqlite3.Connection,
    session_id: str,
    messages: Sequence[Message],
    links: Sequence[LinkRecord],
    calls: dict[str, str | tuple[int, str, str]] | None = None,
    seed: tuple[bool, int | None] | None = None,
) -> dict[str, str]:
    """Insert new messages (already-stored ids are skipped) and the links that place them.

    ``calls`` (SQLite): message id -> the ``call`` column of its node row (see
    ``_calls_lean``); on return it holds only the ones written (all, or none). ``seed``
    (SQLite): what the node keys read first, read already in this transaction
    (``_sessions.NodeSeed``).

    A link whose ``node_id`` is its ``message_id`` places a message at home (on its row);
    any other link becomes a ``message_links`` row. When a message sent again is already at
    home elsewhere, its home link becomes a ``message_links`` row with a new node id.

    Returns:
        The node ids renamed that way (old -> new): slot heads must follow them.

    Raises:
        StorageError: A node that exists already would be written again.
    """
    if not _postgres(conn) and lean.insert_new(
        conn, session_id, messages, links, _row, calls, seed
    ):
        return {}  # a turn's new messages, in one insert
    if calls:
        calls.clear()  # the careful way keeps no call on a node row
    new_ids = {m.id for m in messages}
    links, renamed = _rehome(conn, new_ids, links) if new_ids else (list(links), {})
    if not _postgres(conn):
        lean.insert_nodes(conn, session_id, messages, links, _row)
        return renamed
    homes = {lk.message_id: lk for lk in links if lk.node_id == lk.message_id}
    conn.executemany(
        "INSERT OR IGNORE INTO messages (message_id, session_id, parent_id, depth, role, "
        "content, tool_call_id, tool_name, created_us, extra_json) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [_row(m, session_id, homes.get(m.id)) for m in messages],
    )
    for message_id, home in homes.items():
        if message_id in new_ids:
            continue
        placed = conn.execute(
            "UPDATE messages SET parent_id = ?, depth = ? WHERE message_id = ? AND depth IS NULL",
            (home.parent_node_id, home.depth, message_id),
        )
        if placed.rowcount == 0:
            raise StorageError(
                "chain node exists already or its message is not stored", node_id=message_id
            )
    conn.executemany(
        "INSERT INTO message_links (node_id, parent_node_id, message_id, depth, session_id) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (lk.node_id, lk.parent_node_id, lk.message_id, lk.depth, session_id)
            for lk in links
            if lk.node_id != lk.message_id
        ],
    )
    return renamed


_CHAIN_SQL = """
WITH RECURSIVE chain(node_id, parent_id, message_id, depth) AS (
    SELECT message_id, parent_id, message_id, depth
        FROM messages WHERE message_id = ?1 AND depth IS NOT NULL
    UNION ALL
    SELECT node_id, parent_node_id, message_id, depth FROM message_links WHERE node_id = ?1
    UNION ALL
    SELECT m.message_id, m.parent_id, m.message_id, m.depth
        FROM chain c JOIN messages m ON m.message_id = c.parent_id
    UNION ALL
    SELECT l.node_id, l.parent_node_id, l.message_id, l.depth
        FROM chain c JOIN message_links l ON l.node_id = c.parent_id
)
SELECT c.node_id, c.parent_id AS chain_parent, c.depth AS chain_depth, m.*
FROM chain c JOIN messages m ON m.message_id = c.message_id
ORDER BY c.depth
"""


# PostgreSQL allows one recursive term only: both ways up a chain in a LATERAL join.
_CHAIN_SQL_PG = """
WITH RECURSIVE chain(node_id, parent_id, message_id, depth) AS (
    SELECT message_id, parent_id, message_id, depth
        FROM messages WHERE message_id = ?1 AND depth IS NOT NULL
    UNION ALL
    SELECT node_id, parent_node_id, message_id, depth FROM message_links WHERE node_id = ?1
    UNION ALL
    SELECT up.node_id, up.parent_id, up.message_id, up.depth FROM chain c CROSS JOIN LATERAL (
        SELECT m.message_id AS node_id, m.parent_id, m.message_id, m.depth
            FROM messages m WHERE m.message_id = c.parent_id
        UNION ALL
        SELECT l.node_id, l.parent_node_id, l.message_id, l.depth
            FROM message_links l WHERE l.node_id = c.parent_id
    ) up
)
SELECT c.node_id, c.parent_id AS chain_parent, c.depth AS chain_depth, m.*
FROM chain c JOIN messages m ON m.message_id = c.message_id
ORDER BY c.depth
"""


def _postgres(conn: object) -> bool:
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def read_chain(conn: sqlite3.Connection, head_node_id: str) -> list[tuple[LinkRecord, Message]]:
    """The chain ending at ``head_node_id``, oldest first, in one recursive query."""
    if not _postgres(conn):
        return lean.read_nodes(conn, head_node_id, None, _built, _entry)
    cursor = conn.execute(_CHAIN_SQL_PG if _postgres(conn) else _CHAIN_SQL, (head_node_id,))
    return build_all(cursor, _entries(cursor))  # row by row: no list of raw rows


_ENTRY_COLUMNS = (
    "node_id",
    "chain_parent",
    "chain_depth",
    "message_id",
    "role",
    "content",
    "tool_call_id",
    "tool_name",
    "created_us",
    "extra_json",
)


def _entry(
    node_id: str, parent: str | None, depth: int, built: Message
) -> tuple[LinkRecord, Message]:
    link = {
        "node_id": built.id if node_id == built.id else node_id,  # one string, not two
        "parent_node_id": parent,
        "message_id": built.id,
        "depth": depth,
    }
    return trusted(LinkRecord, link, _LINK_SET), built


def _entries(cursor: Any) -> Callable[[Sequence[Any]], tuple[LinkRecord, Message]]:
    """A builder of chain entries from the rows of ``cursor`` (plain tuples on SQLite),
    reading the columns by position, found once by name."""
    names = getattr(cursor, "columns", None) or [d[0] for d in cursor.description]
    at = {name: i for i, name in enumerate(names)}
    node, parent, depth, *message = (at[name] for name in _ENTRY_COLUMNS)

    def entry(row: Sequence[Any]) -> tuple[LinkRecord, Message]:
        built = _built(*(row[i] for i in message))
        node_id = row[node]
        link = {
            "node_id": built.id if node_id == built.id else node_id,  # one string, not two
            "parent_node_id": row[parent],
            "message_id": built.id,
            "depth": row[depth],
        }
        return trusted(LinkRecord, link, _LINK_SET), built

    return entry


# The newest ``?2`` nodes of a chain: the same walk up, counting steps (``n``) and stopping at
# the limit, so a live session reads only the part of a chain it does not hold already.
_TAIL_SQL = """
WITH RECURSIVE chain(node_id, parent_id, message_id, depth, n) AS (
    SELECT message_id, parent_id, message_id, depth, 1
        FROM messages WHERE message_id = ?1 AND depth IS NOT NULL
    UNION ALL
    SELECT node_id, parent_node_id, message_id, depth, 1 FROM message_links WHERE node_id = ?1
    UNION ALL
    SELECT m.message_id, m.parent_id, m.message_id, m.depth, c.n + 1
        FROM chain c JOIN messages m ON m.message_id = c.parent_id WHERE c.n < ?2
    UNION ALL
    SELECT l.node_id, l.parent_node_id, l.message_id, l.depth, c.n + 1
        FROM chain c JOIN message_links l ON l.node_id = c.parent_id WHERE c.n < ?2
)
SELECT c.node_id, c.parent_id AS chain_parent, c.depth AS chain_depth, m.*
FROM chain c JOIN messages m ON m.message_id = c.message_id
ORDER BY c.depth
"""

_TAIL_SQL_PG = """
WITH RECURSIVE chain(node_id, parent_id, message_id, depth, n) AS (
    SELECT message_id, parent_id, message_id, depth, 1
        FROM messages WHERE message_id = ?1 AND depth IS NOT NULL
    UNION ALL
    SELECT node_id, parent_node_id, message_id, depth, 1 FROM message_links WHERE node_id = ?1
    UNION ALL
    SELECT up.node_id, up.parent_id, up.message_id, up.depth, c.n + 1
    FROM chain c CROSS JOIN LATERAL (
        SELECT m.message_id AS node_id, m.parent_id, m.message_id, m.depth
            FROM messages m WHERE m.message_id = c.parent_id
        UNION ALL
        SELECT l.node_id, l.parent_node_id, l.message_id, l.depth
            FROM message_links l WHERE l.node_id = c.parent_id
    ) up WHERE c.n < ?2
)
SELECT c.node_id, c.parent_id AS chain_parent, c.depth AS chain_depth, m.*
FROM chain c JOIN messages m ON m.message_id = c.message_id
ORDER BY c.depth
"""


def read_chain_tail(
    conn: sqlite3.Connection, head_node_id: str, limit: int
) -> list[tuple[LinkRecord, Message]]:
    """The newest ``limit`` nodes of the chain ending at ``head_node_id``, oldest first; the
    first one's ``parent_node_id`` says where the rest of the chain continues."""
    if not _postgres(conn):
        return lean.read_nodes(conn, head_node_id, limit, _built, _entry)
    sql = _TAIL_SQL_PG
    cursor = conn.execute(sql, (head_node_id, limit))
    return build_all(cursor, _entries(cursor))  # row by row: no list of raw rows


# The nodes of a session (its messages' homes and its links), and the nodes of *other* sessions'
# chains, slots and checkpoints that point into them: the starting points of what must stay.
_MINE = """
mine(node_id) AS (
    SELECT message_id FROM messages WHERE session_id = ?1
    UNION ALL SELECT node_id FROM message_links WHERE session_id = ?1
)"""
_SEEDS = """
    SELECT parent_id FROM messages
        WHERE session_id <> ?1 AND parent_id IN (SELECT node_id FROM mine)
    UNION SELECT parent_node_id FROM message_links
        WHERE session_id <> ?1 AND parent_node_id IN (SELECT node_id FROM mine)
    UNION SELECT message_id FROM message_links
        WHERE session_id <> ?1 AND message_id IN (SELECT node_id FROM mine)
    UNION SELECT head_node_id FROM slots
        WHERE session_id <> ?1 AND head_node_id IN (SELECT node_id FROM mine)
    UNION SELECT {head} FROM checkpoints c, {each} s
        WHERE c.session_id <> ?1 AND {head} IN (SELECT node_id FROM mine)"""

_SQLITE_SEEDS = _SEEDS.format(head="json_extract(s.value, '$[0]')", each="json_each(c.slots_json)")
_PG_SEEDS = _SEEDS.format(head="(s.value->>0)", each="jsonb_each(c.slots_json::jsonb)")

_KEEP_SQL = f"""
WITH RECURSIVE{_MINE},
keep(node_id) AS ({_SQLITE_SEEDS}
    UNION SELECT m.parent_id FROM keep k JOIN messages m ON m.message_id = k.node_id
        WHERE m.parent_id IS NOT NULL
    UNION SELECT l.parent_node_id FROM keep k JOIN message_links l ON l.node_id = k.node_id
        WHERE l.parent_node_id IS NOT NULL
    UNION SELECT l.message_id FROM keep k JOIN message_links l ON l.node_id = k.node_id
)
SELECT node_id FROM keep
"""

# PostgreSQL allows one recursive term only: the three ways up a chain in a LATERAL join.
_KEEP_SQL_PG = f"""
WITH RECURSIVE{_MINE},
seeds(node_id) AS ({_PG_SEEDS}
),
keep(node_id) AS (
    SELECT node_id FROM seeds
    UNION
    SELECT up.node_id FROM keep k CROSS JOIN LATERAL (
        SELECT m.parent_id AS node_id FROM messages m
            WHERE m.message_id = k.node_id AND m.parent_id IS NOT NULL
        UNION ALL SELECT l.parent_node_id FROM message_links l
            WHERE l.node_id = k.node_id AND l.parent_node_id IS NOT NULL
        UNION ALL SELECT l.message_id FROM message_links l WHERE l.node_id = k.node_id
    ) up
)
SELECT node_id FROM keep
"""


def delete_session_chains(conn: sqlite3.Connection, session_id: str) -> None:
    """Delete a session's messages and links, keeping every node another session's chain
    (a slot, or any of its checkpoints) still passes through, and that node's ancestors."""
    if not _postgres(conn):
        lean.delete_nodes_of_session(conn, session_id)
        return
    keep = _KEEP_SQL_PG
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS _keep(node_id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM _keep")
    conn.execute("INSERT OR IGNORE INTO _keep (node_id) " + keep, (session_id,))
    conn.execute(
        "DELETE FROM message_links WHERE session_id = ? "
        "AND node_id NOT IN (SELECT node_id FROM _keep)",
        (session_id,),
    )
    conn.execute(
        "DELETE FROM messages WHERE session_id = ? "
        "AND message_id NOT IN (SELECT node_id FROM _keep) "
        "AND message_id NOT IN (SELECT message_id FROM message_links)",
        (session_id,),
    )
    conn.execute("DELETE FROM _keep")
