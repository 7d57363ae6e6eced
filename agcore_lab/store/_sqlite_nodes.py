"""Writing and reading ``chain_nodes`` rows (SQLite, schema 11) by their text ids.

The one place text ids become node keys (see :mod:`agcore_lab.store._node_keys`): new nodes
get their id's clock digits as key unless another node holds that key already (then a
negative key, the id kept in ``text_ids``), references (parents, the message a link places)
resolve to the key their node has. Used by a turn's commit (``insert_chain``), by migration
m011 and by ``agcore-lab migrate`` into SQLite (rows in the old ``messages`` /
``message_links`` columns).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from agcore_lab.store._calls import CALL_COLUMNS
from agcore_lab.store._checkpoint_rows import COLUMNS as CHECKPOINT_COLUMNS
from agcore_lab.store._node_keys import (
    LINK,
    MESSAGE,
    ROLE_CODES,
    ROLE_NAMES,
    new_text_key,
    render,
    session_key,
    split_id,
    text_keys,
)
from agcore_lab.store._sqlite_checkpoints import write_checkpoint

__all__ = ["INSERT_NODE", "INSERT_NODE_CALL", "Keys", "node_texts", "write_old_rows"]

INSERT_NODE = (
    "INSERT INTO chain_nodes (node, tail, session, parent, depth, role, content, created, "
    "message, tool_call_id, tool_name, extra_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# A turn's rows, with schema 12's ``call`` column (a turn's common model call, _calls_lean).
INSERT_NODE_CALL = INSERT_NODE.replace("extra_json)", "extra_json, call)").replace(
    "?, ?)", "?, ?, ?)"
)


def _in(conn: sqlite3.Connection, sql: str, keys: Sequence[Any]) -> list[Any]:
    rows: list[Any] = []
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        rows.extend(conn.execute(sql.format(marks=",".join("?" * len(batch))), tuple(batch)))
    return rows


class Keys:
    """Node keys of text ids, within one write transaction."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        session_id: str | None = None,
        seed: tuple[bool, int | None] | None = None,
    ) -> None:
        self.conn = conn
        self.known: dict[str, int] = {}
        self.sessions: dict[str, int] = {}
        self._texts: bool | None = None
        if session_id is None:
            return
        if seed is None:  # both in one statement: a turn's commit asks for both
            texts, session = conn.execute(
                "SELECT (SELECT 1 FROM text_ids LIMIT 1), "
                "(SELECT key FROM session_keys WHERE session_id = ?)",
                (session_id,),
            ).fetchone()
            seed = (texts is not None, session)
        # ``seed``: the same two, read in this transaction by the statement before
        # (_sessions.NodeSeed: the turn commit's session update)
        self._texts = seed[0]
        if seed[1] is not None:
            self.sessions[session_id] = int(seed[1])

    def session(self, session_id: str) -> int:
        """The number of ``session_id`` (made if it has none)."""
        found = self.sessions.get(session_id)
        if found is None:
            found = session_key(self.conn, session_id, create=True)
            assert found is not None
            self.sessions[session_id] = found
        return found

    def own(self, nodes: Sequence[tuple[str, str]]) -> dict[str, int | None]:
        """Keys for new nodes ``(text id, prefix)``: ``None`` for a node stored already
        (the same id, so the same node). A key another node holds gives way to a new one."""
        texts = [text for text, _ in nodes]
        kept = text_keys(self.conn, texts) if self._any_text() else {}
        split = {text: split_id(text, prefix) for text, prefix in nodes if text not in kept}
        wanted = [kt[0] for kt in split.values() if kt is not None]
        held = {
            node: (tail, is_link)
            for node, tail, is_link in _in(
                self.conn,
                "SELECT node, tail, role IS NULL FROM chain_nodes WHERE node IN ({marks})",
                wanted,
            )
        }
        stored_kept = (
            {
                row[0]
                for row in _in(
                    self.conn,
                    "SELECT node FROM chain_nodes WHERE node IN ({marks})",
                    list(kept.values()),
                )
            }
            if kept
            else set()
        )
        keys: dict[str, int | None] = {}
        for text, prefix in nodes:
            if text in keys:
                continue
            if text in kept:
                key = kept[text]
                keys[text] = None if key in stored_kept and prefix == MESSAGE else key
                self.known[text] = key
                continue
            pair = split[text]
            if pair is not None:
                key, tail = pair
                found = held.get(key)
                if found is None:
                    held[key] = (tail, prefix == LINK)
                    keys[text] = self.known[text] = key
                    continue
                if found == (tail, prefix == LINK):
                    # The same node: a message is skipped, a link's insert fails as it should.
                    keys[text] = None if prefix == MESSAGE else key
                    self.known[text] = key
                    continue
            key = new_text_key(self.conn, text)
            keys[text] = self.known[text] = key
            self._texts = True
        return keys

    def refs(self, texts: Iterable[str | None]) -> dict[str, int]:
        """The keys of referenced nodes (stored, or in this transaction)."""
        wanted = {t for t in texts if t is not None and t not in self.known}
        if wanted and self._any_text():
            self.known.update(text_keys(self.conn, wanted))
        for text in wanted:
            if text in self.known:
                continue
            pair = split_id(text, MESSAGE) or split_id(text, LINK)
            if pair is not None:
                self.known[text] = pair[0]
            else:
                self.known[text] = new_text_key(self.conn, text)
                self._texts = True
        return self.known

    def any_text(self) -> bool:
        """Whether any node id is kept as text (in this file, or by this transaction)."""
        return self._any_text()

    def _any_text(self) -> bool:
        if self._texts is None:
            found = self.conn.execute("SELECT 1 FROM text_ids LIMIT 1").fetchone()
            self._texts = found is not None
        return self._texts


def node_texts(conn: sqlite3.Connection, keys: Iterable[int]) -> dict[int, str]:
    """The text ids of stored nodes by key."""
    wanted = sorted(set(keys))
    texts: dict[int, str] = {}
    for node, tail, role, text in _in(
        conn,
        "SELECT c.node, c.tail, c.role, t.id FROM chain_nodes c "
        "LEFT JOIN text_ids t ON t.key = c.node WHERE c.node IN ({marks})",
        wanted,
    ):
        texts[node] = (
            text if node < 0 else render(node, tail, MESSAGE if role is not None else LINK)
        )
    missing = [k for k in wanted if k not in texts and k < 0]
    for key, text in _in(conn, "SELECT key, id FROM text_ids WHERE key IN ({marks})", missing):
        texts[key] = text
    return texts


def created_offset(node: int, created_us: int) -> int:
    """What a node row stores of its message's time: the offset from its key's time (exact
    and small: an id and its message are made together), or the time itself for keys that
    are not a clock."""
    return created_us - node // 1000 if node > 0 else created_us


def write_old_rows(
    conn: sqlite3.Connection,
    messages: Sequence[Sequence[Any]],
    links: Sequence[Sequence[Any]],
) -> None:
    """Store rows in the columns of schema 10's ``messages`` and ``message_links`` (one batch
    of a conversion or a copy).

    Raises:
        StorageError: A link's node is stored already.
    """
    keys = Keys(conn)
    own = keys.own([(str(m[0]), MESSAGE) for m in messages] + [(str(lk[0]), LINK) for lk in links])
    known = keys.refs([m[2] for m in messages] + [lk[1] for lk in links] + [lk[2] for lk in links])
    rows: list[tuple[Any, ...]] = []
    for (
        message_id,
        session_id,
        parent,
        depth,
        role,
        content,
        call,
        tool,
        created,
        extra,
    ) in messages:
        node = own[message_id]
        if node is None:
            continue
        rows.append(
            (
                node,
                _tail(node, message_id, MESSAGE),
                keys.session(session_id),
                known[parent] if parent is not None else None,
                depth,
                ROLE_CODES.get(role, role),
                content,
                created_offset(node, created),
                None,
                call,
                tool,
                extra,
            )
        )
    for node_id, parent, message_id, depth, session_id in links:
        node = own[node_id]
        assert node is not None  # a link stored already: its insert fails below
        rows.append(
            (
                node,
                _tail(node, node_id, LINK),
                keys.session(session_id),
                known[parent] if parent is not None else None,
                depth,
                None,
                None,
                None,
                known[message_id],
                None,
                None,
                None,
            )
        )
    conn.executemany(INSERT_NODE, rows)


def _tail(node: int, text: str, prefix: str) -> int | None:
    if node < 0:
        return None
    pair = split_id(text, prefix)
    assert pair is not None
    return pair[1]


def role_name(code: object) -> str:
    """The role of a row's code (``ROLE_NAMES``), as a message wants it."""
    return ROLE_NAMES[code] if type(code) is int else str(code)


# The views of schema 11 that stand for schema 10's tables, in their columns' order; a copy
# into SQLite (``agcore-lab migrate``) writes through write_old_table.
OLD_TABLES = {
    "messages": (
        "message_id",
        "session_id",
        "parent_id",
        "depth",
        "role",
        "content",
        "tool_call_id",
        "tool_name",
        "created_us",
        "extra_json",
    ),
    "message_links": ("node_id", "parent_node_id", "message_id", "depth", "session_id"),
    "checkpoints": CHECKPOINT_COLUMNS,
    # Schema 12: the view over call_rows and the calls riding on node rows (_calls_lean);
    # copied in, every call is a row of call_rows (the same call, read back the same).
    "model_calls": CALL_COLUMNS,
}
BASE_TABLES = frozenset(
    {
        "chain_nodes",
        "session_keys",
        "text_ids",
        "checkpoint_rows",
        "checkpoint_ids",
        "names",
        "call_rows",
    }
)


def write_old_table(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """Store rows of an old table (``OLD_TABLES``) given in ``columns``' order."""
    order = [list(columns).index(name) for name in OLD_TABLES[table]]
    shaped = [tuple(row[i] for i in order) for row in rows]
    if table == "messages":
        write_old_rows(conn, shaped, [])
    elif table == "model_calls":
        columns_sql = ", ".join(OLD_TABLES[table])
        marks = ", ".join("?" * len(OLD_TABLES[table]))
        conn.executemany(f"INSERT INTO call_rows ({columns_sql}) VALUES ({marks})", shaped)
    elif table == "checkpoints":
        for row in shaped:
            write_checkpoint(conn, row)
    else:
        write_old_rows(conn, [], shaped)


def clear_old_table(conn: sqlite3.Connection, table: str) -> None:
    """Empty an old table (``OLD_TABLES``): its rows of ``chain_nodes``."""
    if table == "checkpoints":
        conn.execute("DELETE FROM checkpoint_rows")
        return
    if table == "model_calls":
        conn.execute("DELETE FROM call_rows")
        conn.execute("UPDATE chain_nodes SET call = NULL WHERE call IS NOT NULL")
        return
    kind = "IS NOT NULL" if table == "messages" else "IS NULL"
    conn.execute(f"DELETE FROM chain_nodes WHERE role {kind}")
