"""Checkpoint rows of schema 11 (SQLite): one lean ``checkpoint_rows`` row per checkpoint.

The key is the checkpoint id's clock digits (its random digits in ``tail``; any other id gets
a negative key and its text in ``checkpoint_ids``), the session a number (``session_keys``),
the parent and the slot's head as small offsets from the key plus their random digits, the time
an offset from the key's time, the source a code, and names (agent, slot, model, slot-state
digest) numbers in ``names``. The common case — one slot, the current one; one model whose
totals are the checkpoint's — is all flat columns; anything else keeps its JSON column as
before. The ``checkpoints`` view gives the old columns (and ``checkpoints_keyed`` the keys
beside them, for the store's own lookups).

Every write goes through :func:`write_checkpoint` with a row in the old columns
(``_checkpoint_rows.COLUMNS``): a turn's checkpoint, migration m011, and ``agcore-lab migrate``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from agcore_lab.store._checkpoint_flat import flat_slot, flat_spend
from agcore_lab.store._node_keys import render, session_key, split_id
from agcore_lab.store._null_columns import NullColumns

__all__ = [
    "CKPT",
    "base_and_ids",
    "checkpoint_base",
    "checkpoint_key",
    "clear_checkpoints",
    "ids_of_session",
    "latest_checkpoint_id",
    "write_checkpoint",
    "write_checkpoints",
]

CKPT = "ckpt"
SOURCES = {"auto": 0, "manual": 1, "fork": 2, "rollback": 3}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A row written without the columns it has NULL (see _null_columns): a turn's checkpoint
# has six, a session's first one ten.
_INSERT = NullColumns(
    "checkpoint_rows",
    (
        "ckpt tail session parent parent_tail turn_index created source message_count "
        "prompt_tokens completion_tokens cost_usd agent current_slot last_summary_turn "
        "memory_version head head_tail state model requests label created_text slots_json "
        "spend_json pending_json"
    ).split(),
    optional=(
        "parent parent_tail last_summary_turn head head_tail model requests label created_text "
        "slots_json spend_json pending_json"
    ).split(),
)


def _names(conn: sqlite3.Connection, wanted: Sequence[str]) -> dict[str, int]:
    """The numbers of ``wanted`` names in ``names`` (made for those without one)."""
    distinct = sorted(set(wanted))
    found: dict[str, int] = dict(
        conn.execute(
            f"SELECT name, key FROM names WHERE name IN ({','.join('?' * len(distinct))})",
            distinct,
        ).fetchall()
    )
    for name in distinct:
        if name not in found:
            found[name] = int(
                conn.execute(
                    "INSERT INTO names (name) VALUES (?) RETURNING key", (name,)
                ).fetchone()[0]
            )
    return found


def _kept(conn: sqlite3.Connection, ckpt_id: str) -> int | None:
    found = conn.execute("SELECT key FROM checkpoint_ids WHERE ckpt_id = ?", (ckpt_id,)).fetchone()
    return int(found[0]) if found is not None else None


def _new_kept(conn: sqlite3.Connection, ckpt_id: str) -> int:
    key = conn.execute("SELECT coalesce(min(key), 0) - 1 FROM checkpoint_ids").fetchone()[0]
    conn.execute("INSERT INTO checkpoint_ids (key, ckpt_id) VALUES (?, ?)", (key, ckpt_id))
    return int(key)


def checkpoint_key(conn: sqlite3.Connection, ckpt_id: str) -> int | None:
    """The key of stored checkpoint ``ckpt_id``, or ``None``."""
    kept = _kept(conn, ckpt_id)
    if kept is not None:
        return kept
    pair = split_id(ckpt_id, CKPT)
    if pair is None:
        return None
    found = conn.execute("SELECT tail FROM checkpoint_rows WHERE ckpt = ?", (pair[0],)).fetchone()
    return pair[0] if found is not None and found[0] == pair[1] else None


def _own(conn: sqlite3.Connection, ckpt_id: str) -> tuple[int, int | None]:
    kept = _kept(conn, ckpt_id)
    if kept is not None:
        return kept, None
    pair = split_id(ckpt_id, CKPT)
    if pair is not None:
        found = conn.execute(
            "SELECT tail FROM checkpoint_rows WHERE ckpt = ?", (pair[0],)
        ).fetchone()
        if found is None or found[0] == pair[1]:  # free, or this id (its insert then fails)
            return pair
    return _new_kept(conn, ckpt_id), None


def _reference(
    conn: sqlite3.Connection, key: int, ckpt_id: str, texts: bool = True
) -> tuple[int, int | None]:
    """A parent as (key - parent key, parent's random digits or NULL: text kept);
    ``texts``: whether any checkpoint id may be kept as text."""
    kept = _kept(conn, ckpt_id) if texts else None
    if kept is None:
        pair = split_id(ckpt_id, CKPT)
        if pair is not None:
            return key - pair[0], pair[1]
        kept = _new_kept(conn, ckpt_id)
    return key - kept, None


def _time(text: object, key: int) -> tuple[int | None, object]:
    """(offset, None) when the view gives back exactly ``text``; else (None, text). A
    ``datetime`` (a checkpoint's own time, not read from a text) stands for its isoformat:
    at offset 0 that is the text the view renders for its moment, so it is not rendered
    again to compare (a text may not be: ``+00:00`` and ``Z``, fewer fraction digits)."""
    if type(text) is datetime:  # its text is rendered only when it is stored
        moment, own = text, True
    elif type(text) is str:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None, text
        own = False
    else:
        return None, text
    micros = (
        (moment - _EPOCH) // timedelta(microseconds=1)
        if moment.utcoffset() == timedelta(0)
        else -1  # naive or not UTC: kept as text
    )
    if micros < 0 or (not own and (_EPOCH + timedelta(microseconds=micros)).isoformat() != text):
        return None, moment.isoformat() if own else text
    return micros - (key // 1000 if key > 0 else 0), None


def write_checkpoint(
    conn: sqlite3.Connection,
    row: Sequence[Any],
    known: tuple[Any, Any] | None = None,
    found: Sequence[Any] | None = None,
) -> None:
    """Store one checkpoint given in the old columns (``_checkpoint_rows.COLUMNS``).

    ``known``: what ``_checkpoint_flat.flat_slot_of`` and ``flat_spend_of`` said of the row's
    slots and spend, when the caller has them as values (its ``slots_json`` / ``spend_json``
    may then be ``None`` where they are flat: they are not stored). ``found``: what the row
    needs to know, read already in the same transaction (:func:`base_and_ids`)."""
    session_id, ckpt_id = row[0], row[1]
    known = _known(row, known)
    wanted = _wanted(row, known)
    if found is None:  # what the row needs to know, in one statement
        found = conn.execute(
            f"SELECT {_IDS}" + "".join(_NAME for _ in wanted), (session_id, *wanted)
        ).fetchone()
    texts = found[0] is not None
    session = found[1]
    if session is None:
        session = session_key(conn, session_id, create=True)
    names = dict(zip(wanted, found[2:], strict=True))
    if None in names.values():
        names = _names(conn, wanted)
    pair = None if texts else split_id(ckpt_id, CKPT)
    key, tail = pair if pair is not None else _own(conn, ckpt_id)

    def values(key: int, tail: int | None) -> tuple[Any, ...]:
        return _lean_values(conn, row, known, (key, tail, session), names, texts)

    try:
        _INSERT.execute(conn, values(key, tail))
    except sqlite3.IntegrityError:
        if (
            pair is None
            or tail
            == conn.execute("SELECT tail FROM checkpoint_rows WHERE ckpt = ?", (key,)).fetchone()[0]
        ):
            raise  # this checkpoint is stored already (or a value is not allowed)
        # Another checkpoint's id has the same clock digits: this one's is kept as text.
        _INSERT.execute(conn, values(_new_kept(conn, ckpt_id), None))


def write_checkpoints(
    conn: sqlite3.Connection, rows: Sequence[tuple[Sequence[Any], tuple[Any, Any] | None]]
) -> None:
    """:func:`write_checkpoint` of many ``(row, known)`` (new sessions' first checkpoints):
    one read of their sessions' numbers and names and one ``executemany``. Row by row instead
    while any checkpoint id is kept as text, or when a key is taken (or given twice)."""
    pairs = [split_id(row[1], CKPT) for row, _ in rows]
    keys = [pair[0] for pair in pairs if pair is not None]
    taken = len(keys) < len(rows) or len(set(keys)) < len(keys)
    if not taken:
        probe = ",".join("?" * len(keys))
        found = conn.execute(
            "SELECT (SELECT 1 FROM checkpoint_ids LIMIT 1), "
            f"(SELECT 1 FROM checkpoint_rows WHERE ckpt IN ({probe}) LIMIT 1)",
            keys,
        ).fetchone()
        taken = found != (None, None)
    if taken:
        for row, given in rows:
            write_checkpoint(conn, row, given)
        return
    flats = [_known(row, given) for row, given in rows]
    wanted = {n for (row, _), k in zip(rows, flats, strict=True) for n in _wanted(row, k)}
    names = _names(conn, sorted(wanted)) if wanted else {}
    sessions = sorted({row[0] for row, _ in rows})
    numbers: dict[str, int] = dict(
        conn.execute(
            "SELECT session_id, key FROM session_keys WHERE session_id IN "
            f"({','.join('?' * len(sessions))})",
            sessions,
        ).fetchall()
    )
    for session_id in sessions:
        if session_id not in numbers:
            made = session_key(conn, session_id, create=True)
            assert made is not None  # made when missing
            numbers[session_id] = made
    _INSERT.executemany(
        conn,
        [
            _lean_values(conn, row, flat, (*pair, numbers[row[0]]), names, False)
            for (row, _), flat, pair in zip(rows, flats, pairs, strict=True)
            if pair is not None
        ],
    )


def _known(row: Sequence[Any], known: tuple[Any, Any] | None) -> tuple[Any, Any]:
    # Whether the row's slots and spend are flat, from their texts when not given.
    if known is not None:
        return known
    slots_json, spend_json = row[15], row[16]
    return flat_slot(slots_json, row[12]), flat_spend(spend_json, row[8], row[9], row[10])


def _wanted(row: Sequence[Any], known: tuple[Any, Any]) -> list[str]:
    # The names a row is stored with: its agent and slot, its state digest, its one model.
    flat, spent = known
    wanted = [n for n in (row[11], row[12]) if type(n) is str]
    if flat is not None:
        wanted.append(flat[2])
    if spent is not None:
        wanted.append(spent[0])
    return wanted


def _lean_values(
    conn: sqlite3.Connection,
    row: Sequence[Any],
    known: tuple[Any, Any],
    where: tuple[int, int | None, int],
    names: dict[str, int],
    texts: bool,
) -> tuple[Any, ...]:
    # The checkpoint_rows values of a row in the old columns, at key and tail (``where``:
    # key, tail, session number).
    (
        _,
        _,
        parent,
        turn,
        created_at,
        label,
        source,
        count,
        prompt,
        completion,
        cost,
        agent,
        slot,
        summary_turn,
        memory,
        slots_json,
        spend_json,
        pending_json,
    ) = row
    key, tail, session = where
    flat, spent = known
    offset, parent_tail = (None, None) if parent is None else _reference(conn, key, parent, texts)
    created, created_text = _time(created_at, key)
    head = head_tail = state = model = requests = None
    slots, spend = slots_json, spend_json
    if flat is not None:
        head_key, head_tail, digest = flat
        head = key - head_key if head_key is not None else None
        state, slots = names[digest], None
    if spent is not None:
        model, requests, spend = names[spent[0]], spent[1], None
    return (
        key,
        tail,
        session,
        offset,
        parent_tail,
        turn,
        created,
        SOURCES.get(source, source),
        count,
        prompt,
        completion,
        cost,
        names.get(agent, agent),
        names.get(slot, slot),
        summary_turn,
        memory,
        head,
        head_tail,
        state,
        model,
        requests,
        label,
        created_text,
        slots,
        spend,
        pending_json,
    )


def latest_checkpoint_id(conn: sqlite3.Connection, session_id: str) -> str | None:
    """``max(ckpt_id)`` of a session's checkpoints, by key where the keys are clocks."""
    found = conn.execute(
        "SELECT c.ckpt, c.tail, c.session, (SELECT 1 FROM checkpoint_ids LIMIT 1) "
        "FROM session_keys s JOIN checkpoint_rows c ON c.session = s.key "
        "WHERE s.session_id = ? ORDER BY c.ckpt DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    if found is None:
        return None
    key, tail, session, texts = found
    if texts is None:
        return render(key, tail, CKPT)
    row = conn.execute(
        "SELECT max(ckpt_id) FROM checkpoints_keyed WHERE session_key = ?", (session,)
    ).fetchone()
    return str(row[0]) if row[0] is not None else None


# Ids kept as text? the session's number; then each name's number (``_NAME`` each).
_IDS = "(SELECT 1 FROM checkpoint_ids LIMIT 1), (SELECT key FROM session_keys WHERE session_id = ?)"
_NAME = ", (SELECT key FROM names WHERE name = ?)"
_BASE = (
    "FROM (SELECT coalesce(max(version), 0) AS version FROM memory_log "
    "WHERE session_id = ?1) m LEFT JOIN (SELECT c.ckpt, c.tail, c.session, c.state "
    "FROM session_keys s JOIN checkpoint_rows c ON c.session = s.key "
    "WHERE s.session_id = ?1 ORDER BY c.ckpt DESC LIMIT 1) c"
)


def base_and_ids(
    conn: sqlite3.Connection, row: Sequence[Any], known: tuple[Any, Any]
) -> tuple[str | None, int, Sequence[Any], bool]:
    """:func:`checkpoint_base` of the session of a checkpoint ``row`` (old columns), and in
    the same statement what :func:`write_checkpoint` reads for the row (its ``found``), and
    whether the row's one slot state is the latest checkpoint's (stored then: ``slot_states``
    rows are never deleted)."""
    wanted = _wanted(row, known)
    found = conn.execute(
        "SELECT m.version, c.ckpt, c.tail, c.state, "
        + _IDS.replace("session_id = ?", "session_id = ?1")
        + "".join(_NAME.replace("?", f"?{n}") for n in range(2, len(wanted) + 2))
        + " "
        + _BASE,
        (row[0], *wanted),
    ).fetchone()
    version, key, tail, state, ids = int(found[0]), found[1], found[2], found[3], found[4:]
    flat = known[0]
    stored = flat is not None and state is not None and ids[2 + wanted.index(flat[2])] == state
    if key is None:
        return None, version, ids, stored
    if ids[0] is None:
        return render(key, tail, CKPT), version, ids, stored
    return latest_checkpoint_id(conn, row[0]), version, ids, stored


def checkpoint_base(conn: sqlite3.Connection, session_id: str) -> tuple[str | None, int]:
    """What a session's next checkpoint builds on, in one statement: its latest
    checkpoint's id (:func:`latest_checkpoint_id`) and its memory version (the number of
    its memory writes so far)."""
    found = conn.execute(
        "SELECT m.version, c.ckpt, c.tail, c.session, (SELECT 1 FROM checkpoint_ids LIMIT 1) "
        + _BASE,
        (session_id,),
    ).fetchone()
    version, key, tail, _, texts = found
    if key is None:
        return None, int(version)
    if texts is None:
        return render(key, tail, CKPT), int(version)
    return latest_checkpoint_id(conn, session_id), int(version)


def ids_of_session(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """The ids of a session's checkpoints (in no particular order), from its lean rows by the
    session index; through ``checkpoints_keyed`` by session key only while some checkpoint
    id is kept as text (the ``checkpoints`` view would compute every row's ids)."""
    session = session_key(conn, session_id, create=False)
    if session is None:
        return []
    if conn.execute("SELECT 1 FROM checkpoint_ids LIMIT 1").fetchone() is not None:
        rows = conn.execute(
            "SELECT ckpt_id FROM checkpoints_keyed WHERE session_key = ?", (session,)
        ).fetchall()
        return [str(r[0]) for r in rows]
    rows = conn.execute(
        "SELECT ckpt, tail FROM checkpoint_rows WHERE session = ?", (session,)
    ).fetchall()
    return [render(key, tail, CKPT) for key, tail in rows]


def clear_checkpoints(conn: sqlite3.Connection, session_id: str, ckpt_ids: Any) -> int:
    """Delete a session's checkpoints (all, or those listed); return how many."""
    session = session_key(conn, session_id, create=False)
    if session is None:
        return 0
    if ckpt_ids is None:
        return conn.execute("DELETE FROM checkpoint_rows WHERE session = ?", (session,)).rowcount
    removed = 0
    for ckpt_id in ckpt_ids:
        key = checkpoint_key(conn, ckpt_id)
        if key is not None:
            removed += conn.execute(
                "DELETE FROM checkpoint_rows WHERE session = ? AND ckpt = ?", (session, key)
            ).rowcount
    return removed
