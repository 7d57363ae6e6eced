"""Message chains over ``chain_nodes`` (SQLite, schema 11): insert, read, delete.

The same contracts as :mod:`agcore_lab.store._chains` (which calls these on SQLite and keeps
its text-keyed SQL for PostgreSQL): text ids in, text ids out, the integer keys staying
inside. A chain is walked by rowid (the parent pointer is the parent's key), so a step is one
integer lookup; the rows come out in the shape ``_chains._built`` takes.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

from agcore_lab.errors import StorageError
from agcore_lab.llm.messages import Message
from agcore_lab.store._node_keys import (
    LINK,
    MESSAGE,
    ROLE_NAMES,
    render,
    session_key,
    split_id,
    text_keys,
)
from agcore_lab.store._sqlite_nodes import (
    INSERT_NODE,
    INSERT_NODE_CALL,
    Keys,
    created_offset,
    node_texts,
)
from agcore_lab.store._trusted import build_all
from agcore_lab.store.base import LinkRecord

__all__ = [
    "chain_rows",
    "delete_nodes_of_session",
    "insert_new",
    "insert_nodes",
    "placements",
    "read_nodes",
    "stored_keys",
    "stored_messages",
]

_WHOLE = 1 << 62


def stored_keys(conn: sqlite3.Connection, texts: Iterable[str]) -> dict[str, int]:
    """The keys of the stored nodes among the text ids ``texts`` (messages at home or not,
    and links)."""
    wanted = set(texts)
    kept: dict[str, int] = {}
    if wanted and conn.execute("SELECT 1 FROM text_ids LIMIT 1").fetchone() is not None:
        kept = text_keys(conn, wanted)
    expect: dict[int, tuple[str, int | None, bool]] = {}
    for text in wanted:
        if text in kept:
            expect[kept[text]] = (text, None, False)
            continue
        pair, link = split_id(text, MESSAGE), False
        if pair is None:
            pair, link = split_id(text, LINK), True
        if pair is not None:
            expect[pair[0]] = (text, pair[1], link)
    found: dict[str, int] = {}
    keys = list(expect)
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        for node, tail, is_link in conn.execute(
            f"SELECT node, tail, role IS NULL FROM chain_nodes WHERE node IN "
            f"({','.join('?' * len(batch))})",
            batch,
        ):
            text, want_tail, want_link = expect[node]
            if node < 0 or (tail == want_tail and bool(is_link) == want_link):
                found[text] = node
    return found


def placements(
    conn: sqlite3.Connection, message_ids: Sequence[str]
) -> dict[str, tuple[str | None, int]]:
    """Where the stored, placed messages among ``message_ids`` are at home."""
    keys = stored_keys(conn, message_ids)
    if not keys:
        return {}
    by_key = {key: text for text, key in keys.items()}
    rows = conn.execute(
        f"SELECT node, parent, depth FROM chain_nodes WHERE role IS NOT NULL "
        f"AND depth IS NOT NULL AND node IN ({','.join('?' * len(by_key))})",
        tuple(by_key),
    ).fetchall()
    parents = node_texts(conn, [r[1] for r in rows if r[1] is not None])
    return {
        by_key[node]: (parents.get(parent) if parent is not None else None, depth)
        for node, parent, depth in rows
    }


def insert_new(
    conn: sqlite3.Connection,
    session_id: str,
    messages: Sequence[Message],
    links: Sequence[LinkRecord],
    row: Callable[[Message, str, LinkRecord | None], tuple[Any, ...]],
    calls: dict[str, str | tuple[int, str, str]] | None = None,
    seed: tuple[bool, int | None] | None = None,
) -> bool:
    """A turn's common case of ``insert_chain`` in one insert: new messages with ``new_id``
    ids placed at home, no other links, no id kept as text. The insert fails as a whole
    (SQLite undoes a failed statement) if any row is there already (a message stored
    already); then ``False`` says to take the careful way (``_rehome`` and
    :func:`insert_nodes`), which decides what to do.

    ``calls``: the ``call`` column of some messages' rows (see ``_calls_lean``), all written
    when it returns ``True``; a column given as ``(call start, anchor, the rest)`` is finished
    here with the row's key (its first value: the key's distance from the call's start, and
    the row's random digits), or left out of ``calls`` (not written) if the row's parent is
    not ``anchor`` or the distance is not in ``[0, MAX_CALL_OFFSET)``. ``seed``: what
    ``Keys`` reads first, read already in this transaction (``_sessions.NodeSeed``).
    """
    fresh = _fresh(messages, links)
    if fresh is None:
        return False
    homes, pairs = fresh
    keys = Keys(conn, session_id, seed)
    if keys.any_text():
        return False
    known = keys.known
    for text, pair in pairs.items():
        known[text] = pair[0]
    session = keys.session(session_id)
    rows: list[Any] = []
    dropped: list[str] | None = None
    plain = True  # no tool call id, tool name or extra fields in any row: _PLAIN's columns
    for message in messages:
        (_, _, parent, depth, role, content, call_id, tool, created, extra) = row(
            message, session_id, homes.get(message.id)
        )
        plain = plain and call_id is None and tool is None and extra is None
        node, tail = pairs[message.id]
        column = calls.get(message.id) if calls else None
        if type(column) is tuple:  # (a plain check: this runs for every new message)
            started, anchor, rest = column
            offset = node - started
            if parent == anchor and 0 <= offset < MAX_CALL_OFFSET:
                column = f"[{offset << 20 | tail}{rest}"
            else:  # not right after its history: a row of its own keeps its anchor
                column = None
                dropped = [*(dropped or ()), message.id]
        if parent is None:
            parent_key = None
        else:
            parent_key = known.get(parent)
            if parent_key is None:
                parent_key = keys.refs([parent])[parent]
        rows.append(
            (
                node,
                tail,
                session,
                parent_key,
                depth,
                _ROLE_CODES[role],
                content,
                created - node // 1000,  # created_offset of a clock key
                None,
                call_id,
                tool,
                extra,
                column,
            )
        )
    if not _insert(conn, [_PLAIN(r) for r in rows] if plain else rows):
        return False
    if dropped is not None and calls is not None:
        for message_id in dropped:
            del calls[message_id]
    return True


# A turn's usual call rides on its answer's row only if the answer's id is this close to the
# call's start (ns; about 18 minutes): the row keeps the distance in the call column.
MAX_CALL_OFFSET = 1 << 40


def _fresh(
    messages: Sequence[Message], links: Sequence[LinkRecord]
) -> tuple[dict[str, LinkRecord], dict[str, tuple[int, int]]] | None:
    """The home links and ``(key, tail)`` of a turn's new messages if they are the common
    case (``new_id`` ids, distinct clocks, placed at home only); else ``None``."""
    if not messages:
        return None
    homes: dict[str, LinkRecord] = {}
    for lk in links:
        if lk.node_id != lk.message_id:
            return None
        homes[lk.message_id] = lk
    pairs: dict[str, tuple[int, int]] = {}
    for message in messages:
        pair = split_id(message.id, MESSAGE)
        if pair is None:
            return None
        pairs[message.id] = pair
    if len({pair[0] for pair in pairs.values()}) != len(messages):
        return None
    return (homes, pairs) if homes.keys() <= pairs.keys() else None


def _insert(conn: sqlite3.Connection, rows: list[Any]) -> bool:
    done: list[int] = []
    try:
        for start in range(0, len(rows), 80):
            batch = rows[start : start + 80]
            sql = _insert_rows(len(batch), len(batch[0]) == _PLAIN_WIDTH)
            conn.execute(sql, [value for values in batch for value in values])
            done.extend(values[0] for values in batch)
    except sqlite3.IntegrityError:
        # A row is there already (or a value is not allowed: the careful way says so).
        conn.executemany("DELETE FROM chain_nodes WHERE node = ?", [(k,) for k in done])
        return False
    return True


@lru_cache(maxsize=160)
def _insert_rows(count: int, plain: bool) -> str:
    """The insert of ``count`` node rows in one statement; ``plain``: without the columns a
    plain message's row holds as NULL (``message``, ``tool_call_id``, ``tool_name``,
    ``extra_json``: left out, they are NULL, and ``sqlite3`` binds ``None`` slowly)."""
    if plain:
        head = "INSERT INTO chain_nodes (node, tail, session, parent, depth, role, content, "
        return head + "created, call) VALUES " + ", ".join([_PLAIN_MARKS] * count)
    return INSERT_NODE_CALL.split(" VALUES ")[0] + " VALUES " + ", ".join([_MARKS] * count)


_MARKS = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_PLAIN = operator.itemgetter(0, 1, 2, 3, 4, 5, 6, 7, 12)  # a row's values in _insert_rows(plain)
_PLAIN_WIDTH = 9
_PLAIN_MARKS = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"


def insert_nodes(
    conn: sqlite3.Connection,
    session_id: str,
    messages: Sequence[Message],
    links: Sequence[LinkRecord],
    row: Callable[[Message, str, LinkRecord | None], tuple[Any, ...]],
) -> None:
    """``insert_chain`` on SQLite (its links already re-homed): the new messages (stored ones
    skipped), the homes of stored unplaced ones, and the other links as link rows.

    Raises:
        StorageError: A node that exists already would be written again.
    """
    keys = Keys(conn, session_id)
    homes = {lk.message_id: lk for lk in links if lk.node_id == lk.message_id}
    others = [lk for lk in links if lk.node_id != lk.message_id]
    own = keys.own([(m.id, MESSAGE) for m in messages] + [(lk.node_id, LINK) for lk in others])
    conn.executemany(INSERT_NODE, _rows(keys, session_id, messages, homes, others, own, row))
    _place(conn, keys, messages, homes)


def _rows(
    keys: Keys,
    session_id: str,
    messages: Sequence[Message],
    homes: dict[str, LinkRecord],
    others: Sequence[LinkRecord],
    own: dict[str, int | None],
    row: Callable[[Message, str, LinkRecord | None], tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    new_ids = {m.id for m in messages}
    known = keys.refs(
        [lk.parent_node_id for lk in homes.values()]
        + [lk.parent_node_id for lk in others]
        + [lk.message_id for lk in others]
        + [m for m in homes if m not in new_ids]
    )
    session = keys.session(session_id)
    rows: list[tuple[Any, ...]] = []
    for message in messages:
        node = own[message.id]
        if node is None:
            continue
        (_, _, parent, depth, role, content, call, tool, created, extra) = row(
            message, session_id, homes.get(message.id)
        )
        rows.append(
            (
                node,
                _tail(node, message.id, MESSAGE),
                session,
                known[parent] if parent is not None else None,
                depth,
                _ROLE_CODES[role],
                content,
                created_offset(node, created),
                None,
                call,
                tool,
                extra,
            )
        )
    for link in others:
        node = own[link.node_id]
        assert node is not None  # a link stored already: its insert fails below
        rows.append(
            (
                node,
                _tail(node, link.node_id, LINK),
                session,
                known[link.parent_node_id] if link.parent_node_id is not None else None,
                link.depth,
                None,
                None,
                None,
                known[link.message_id],
                None,
                None,
                None,
            )
        )
    return rows


def _place(
    conn: sqlite3.Connection,
    keys: Keys,
    messages: Sequence[Message],
    homes: dict[str, LinkRecord],
) -> None:
    # Home links of messages stored before without a place: their rows get it now.
    new_ids = {m.id for m in messages}
    for message_id, home in homes.items():
        if message_id in new_ids:
            continue
        known = keys.refs([home.parent_node_id, message_id])
        placed = conn.execute(
            "UPDATE chain_nodes SET parent = ?, depth = ? "
            "WHERE node = ? AND role IS NOT NULL AND depth IS NULL",
            (
                known[home.parent_node_id] if home.parent_node_id is not None else None,
                home.depth,
                known[message_id],
            ),
        )
        if placed.rowcount == 0:
            raise StorageError(
                "chain node exists already or its message is not stored", node_id=message_id
            )


_ROLE_CODES = {name: code for code, name in ROLE_NAMES.items()}


def _tail(node: int, text: str, prefix: str) -> int | None:
    if node < 0:
        return None
    pair = split_id(text, prefix)
    assert pair is not None
    return pair[1]


# The newest ``?2`` nodes of the chain ending at node ``?1``: a walk up by rowid.
_NODES_SQL = """
WITH RECURSIVE chain(node, tail, link, parent, message, depth, n) AS (
    SELECT node, tail, role IS NULL, parent, coalesce(message, node), depth, 1
        FROM chain_nodes WHERE node = ?1 AND depth IS NOT NULL AND tail IS ?3
                               AND (role IS NULL) = ?4
    UNION ALL
    SELECT p.node, p.tail, p.role IS NULL, p.parent, coalesce(p.message, p.node), p.depth,
           c.n + 1
        FROM chain c JOIN chain_nodes p ON p.node = c.parent WHERE c.n < ?2
)
SELECT c.node, c.tail, c.link, c.parent, c.depth,
       CASE WHEN c.node < 0 THEN (SELECT id FROM text_ids WHERE key = c.node) END,
       m.node, m.tail, CASE WHEN m.node < 0 THEN (SELECT id FROM text_ids WHERE key = m.node) END,
       m.role, m.content, m.tool_call_id, m.tool_name,
       m.created + CASE WHEN m.node > 0 THEN m.node / 1000 ELSE 0 END, m.extra_json
FROM chain c JOIN chain_nodes m ON m.node = c.message
ORDER BY c.depth
"""


def chain_rows(conn: sqlite3.Connection, head_node_id: str, limit: int | None) -> list[Any]:
    """The raw rows of :data:`_NODES_SQL` for the chain ending at ``head_node_id`` (its newest
    ``limit`` nodes), oldest first: node, tail, is-link, parent, depth, node text, message
    node, tail and text, role code, content, tool call id, tool name, microseconds, extra."""
    count = _WHOLE if limit is None else limit
    pair, link = split_id(head_node_id, MESSAGE), False
    if pair is None:
        pair, link = split_id(head_node_id, LINK), True
    rows = []
    if pair is not None:  # the common case: one statement
        rows = conn.execute(_NODES_SQL, (pair[0], count, pair[1], link)).fetchall()
    if not rows:  # not there, or kept as text
        head = stored_keys(conn, [head_node_id]).get(head_node_id)
        if head is None:
            return []
        tail, is_link = conn.execute(
            "SELECT tail, role IS NULL FROM chain_nodes WHERE node = ?", (head,)
        ).fetchone()
        rows = conn.execute(_NODES_SQL, (head, count, tail, is_link)).fetchall()
    return rows


def read_nodes(
    conn: sqlite3.Connection,
    head_node_id: str,
    limit: int | None,
    built: Callable[..., Message],
    entry: Callable[[str, str | None, int, Message], tuple[LinkRecord, Message]],
) -> list[tuple[LinkRecord, Message]]:
    """The chain ending at ``head_node_id`` (its newest ``limit`` nodes), oldest first."""
    rows = chain_rows(conn, head_node_id, limit)
    texts: dict[int, str] = {}

    def one(row: Sequence[Any]) -> tuple[LinkRecord, Message]:
        node, tail, link, parent, depth, node_text, mnode, mtail, mtext = row[:9]
        if mnode == node and not link:
            message_id = node_text if node < 0 else render(node, tail, MESSAGE)
            node_id = message_id
        else:
            node_id = node_text if node < 0 else render(node, tail, LINK)
            message_id = mtext if mnode < 0 else render(mnode, mtail, MESSAGE)
        if parent is None:
            parent_text = None
        elif parent in texts:
            parent_text = texts[parent]
        else:  # the first row's parent, further up than the limit
            parent_text = node_texts(conn, [parent]).get(parent)
        texts[node] = node_id
        role, content, call, tool, created, extra = row[9:]
        message = built(message_id, ROLE_NAMES[role], content, call, tool, created, extra)
        return entry(node_id, parent_text, depth, message)

    return build_all(rows, one)


_STORED_SQL = """
SELECT m.node, m.tail, CASE WHEN m.node < 0 THEN (SELECT id FROM text_ids WHERE key = m.node) END,
       m.role, m.content, m.tool_call_id, m.tool_name,
       m.created + CASE WHEN m.node > 0 THEN m.node / 1000 ELSE 0 END, m.extra_json, m.parent
FROM chain_nodes m WHERE m.role IS NOT NULL AND m.node IN ({marks})
"""


def stored_messages(
    conn: sqlite3.Connection, message_ids: Iterable[str], built: Callable[..., Message]
) -> list[tuple[Message, str | None]]:
    """The stored messages among ``message_ids``, each with its home parent node (if any)."""
    keys = list(stored_keys(conn, message_ids).values())
    out: list[tuple[Message, str | None]] = []
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        rows = conn.execute(_STORED_SQL.format(marks=",".join("?" * len(batch))), batch).fetchall()
        parents = node_texts(conn, [r[9] for r in rows if r[9] is not None])
        for node, tail, text, role, content, call, tool, created, extra, parent in rows:
            message_id = text if node < 0 else render(node, tail, MESSAGE)
            message = built(message_id, ROLE_NAMES[role], content, call, tool, created, extra)
            out.append((message, parents.get(parent) if parent is not None else None))
    return out


_KEEP_SQL = """
WITH RECURSIVE keep(node) AS (
    SELECT parent FROM chain_nodes
        WHERE session <> ?1 AND parent IN (SELECT node FROM chain_nodes WHERE session = ?1)
    UNION SELECT message FROM chain_nodes
        WHERE session <> ?1 AND message IN (SELECT node FROM chain_nodes WHERE session = ?1)
    UNION SELECT node FROM _seed_nodes
    UNION SELECT n.parent FROM keep k JOIN chain_nodes n ON n.node = k.node
        WHERE n.parent IS NOT NULL
    UNION SELECT n.message FROM keep k JOIN chain_nodes n ON n.node = k.node
        WHERE n.message IS NOT NULL
)
SELECT node FROM keep WHERE node IS NOT NULL
"""


def delete_nodes_of_session(conn: sqlite3.Connection, session_id: str) -> None:
    """``delete_session_chains`` on SQLite: a session's rows go, except every node another
    session's chain (a slot, or any of its checkpoints) passes through, and its ancestors."""
    session = session_key(conn, session_id, create=False)
    if session is None:
        return
    heads = [
        r[0]
        for r in conn.execute(
            "SELECT head_node_id FROM slots WHERE session_id <> ?1 AND head_node_id IS NOT NULL "
            "UNION SELECT json_extract(s.value, '$[0]') FROM checkpoints c, "
            "json_each(c.slots_json) s WHERE c.session_id <> ?1",
            (session_id,),
        )
        if r[0] is not None
    ]
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS _seed_nodes(node INTEGER PRIMARY KEY)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS _keep_nodes(node INTEGER PRIMARY KEY)")
    conn.execute("DELETE FROM _seed_nodes")
    conn.execute("DELETE FROM _keep_nodes")
    conn.executemany(
        "INSERT OR IGNORE INTO _seed_nodes (node) SELECT ?1 WHERE EXISTS "
        "(SELECT 1 FROM chain_nodes WHERE node = ?1 AND session = ?2)",
        [(key, session) for key in stored_keys(conn, heads).values()],
    )
    conn.execute("INSERT OR IGNORE INTO _keep_nodes (node) " + _KEEP_SQL, (session,))
    conn.execute(
        "DELETE FROM chain_nodes WHERE session = ? AND role IS NULL "
        "AND node NOT IN (SELECT node FROM _keep_nodes)",
        (session,),
    )
    conn.execute(
        "DELETE FROM chain_nodes WHERE session = ? AND role IS NOT NULL "
        "AND node NOT IN (SELECT node FROM _keep_nodes) "
        "AND node NOT IN (SELECT message FROM chain_nodes WHERE message IS NOT NULL)",
        (session,),
    )
    conn.execute("DELETE FROM _seed_nodes")
    conn.execute("DELETE FROM _keep_nodes")
