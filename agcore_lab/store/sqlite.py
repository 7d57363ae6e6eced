"""``SqliteStore``: the default store, one SQLite file (or ``:memory:``).

WAL journal, a busy timeout, numbered migrations run lazily and idempotently on open, one
connection guarded by a lock (safe from several threads), and ``BEGIN IMMEDIATE`` write
transactions (safe from several processes on one file). Driver errors are wrapped in
:class:`~agcore_lab.errors.StorageError`.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import JsonValue

from agcore_lab.checks import check_count
from agcore_lab.errors import ConflictError, SessionNotFoundError
from agcore_lab.ids import utcnow
from agcore_lab.llm.call_note import CallNote
from agcore_lab.llm.call_record import ModelCall
from agcore_lab.llm.history import MessageHistory
from agcore_lab.llm.messages import Message
from agcore_lab.store._approvals import (
    insert_pending,
    restore_pending,
)
from agcore_lab.store._calls import home_parents, insert_calls
from agcore_lab.store._calls_delete import delete_calls_of_checkpoints, delete_session_calls
from agcore_lab.store._calls_lean import node_calls
from agcore_lab.store._calls_read import read_calls
from agcore_lab.store._chain_history import read_chain_history
from agcore_lab.store._chains import (
    delete_session_chains,
    follow_renamed,
    insert_chain,
    read_chain,
    read_chain_tail,
)
from agcore_lab.store._changes import log_change, log_changes, read_changes
from agcore_lab.store._checkpoint_rows import latest_checkpoint_id, read_checkpoints
from agcore_lab.store._checkpoints import (
    INSERT_SLOT,
    UPSERT_SLOT,
    checkpoint_page,
    delete_checkpoints,
    insert_checkpoint,
    insert_turn_checkpoint,
    replace_slots,
    restore_memory,
    slot_from_row,
    slot_values,
)
from agcore_lab.store._iso import fresh_iso
from agcore_lab.store._lean_frame import frame_columns
from agcore_lab.store._lean_listing import list_checkpoints as list_lean_checkpoints
from agcore_lab.store._memory import delete_memory, latest_version, read_memory, write_memory
from agcore_lab.store._memory_writes import append_writes, encoded_write, memory_json
from agcore_lab.store._session_batch import insert_sessions
from agcore_lab.store._sessions import (
    acquire_lease,
    check_writable,
    insert_session,
    renew_lease,
    session_from_row,
    stored_version,
    update_session,
    update_session_leased,
)
from agcore_lab.store._sessions import (
    release_lease as release_lease_row,
)
from agcore_lab.store._sqlite_checkpoint_reads import old_rows
from agcore_lab.store._sqlite_errors import (
    decoding,
)
from agcore_lab.store._sqlite_pending import PendingOperations
from agcore_lab.store.base import (
    ChangeRecord,
    CkptMeta,
    LinkRecord,
    MemoryEntry,
    MemoryIfUnset,
    MemoryWrite,
    SessionRecord,
    SlotRecord,
)
from agcore_lab.store.pending import PendingToolCall

if TYPE_CHECKING:
    from agcore_lab.store.roles.sessions import NewSession

__all__ = ["SqliteStore"]

T = TypeVar("T")

_NO_CALLS: tuple[()] = ()  # a commit's calls when recording is off


# The columns of a slots row, in the order of slot_values.


def _postgres(conn: Any) -> bool:
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def _ts(value: datetime) -> str:
    return value.isoformat()


class SqliteStore(PendingOperations):
    """The default :class:`~agcore_lab.store.base.Store`, backed by SQLite.

    Args:
        path: A file path (created with its schema on first use) or ``":memory:"``.
        timeout: Seconds to wait for another process's write lock before failing (>= 0).
        read_only: Open an existing file without ever writing to it (``mode=ro``): loading,
            listing and reading work; overdue pending calls are reported as ``EXPIRED``
            without storing the transition; every write is a ``StorageError``.

    Raises:
        InvalidInputError: A path with a NUL character, or a negative / NaN ``timeout``.
        StorageError: The file is not a database, or it (or its directory) cannot be made.

    Text with lone surrogates (``"\\ud800"``) is refused with ``InvalidInputError`` on every
    write: it is not valid Unicode, and SQLite stores UTF-8.

    Example:
        >>> store = SqliteStore(":memory:")
        >>> store.list_sessions()
        []

    Notes:
        Safe from several threads (one connection behind a lock) and from several processes
        on one file (WAL journal, ``BEGIN IMMEDIATE`` writes, busy timeout).
    """

    #: :func:`~agcore_lab.store.threaded.as_async` calls it on the event loop, no thread hop:
    #: a local transaction costs less than the hop (bench/store_seam.py).
    async_hop: ClassVar[bool] = False

    # -- sessions ---------------------------------------------------------------------------

    def create_session(
        self,
        record: SessionRecord,
        *,
        slots: Sequence[SlotRecord] = (),
        checkpoint: CkptMeta | None = None,
    ) -> None:
        """Insert a new session (and its first slots, and its first checkpoint when given) in
        one transaction; ``ConflictError`` if its id is taken."""
        with self._write(sessions=[record.session_id]) as conn:
            if stored_version(conn, record.session_id) is not None:
                raise ConflictError("a session with this id exists", session_id=record.session_id)
            insert_session(conn, record)
            conn.executemany(INSERT_SLOT, [slot_values(slot, record.session_id) for slot in slots])
            log_change(conn, record.session_id, "created", self._origin)
            if checkpoint is not None:
                insert_checkpoint(conn, checkpoint)
                log_change(
                    conn,
                    record.session_id,
                    "checkpoint",
                    self._origin,
                    ckpt_id=checkpoint.ckpt_id,
                )

    def create_sessions(
        self, sessions: Sequence[NewSession], *, lease_holder: str | None = None, ttl: float = 0.0
    ) -> None:
        """Insert many new sessions (each with its first slots and checkpoint) in one
        transaction, taking their turn leases for ``lease_holder`` when given; ``ConflictError``
        — and nothing written — if an id is taken or given twice."""
        if not sessions:
            return
        with self._write(sessions=[s.record.session_id for s in sessions]) as conn:
            insert_sessions(
                conn, sessions, self._origin, lease_holder=lease_holder, ttl=ttl, now=utcnow()
            )

    def get_session(self, session_id: str) -> SessionRecord | None:
        """The session's record, or ``None``."""
        rows = self._read("SELECT * FROM sessions WHERE session_id = ?", (session_id,))
        if not rows:
            return None
        with decoding("sessions", session_id):
            return session_from_row(rows[0])

    def list_sessions(self) -> list[SessionRecord]:
        """All sessions, oldest first."""
        rows = self._read("SELECT * FROM sessions ORDER BY created_at, session_id")
        records = []
        for row in rows:
            with decoding("sessions", row["session_id"]):
                records.append(session_from_row(row))
        return records

    def child_ids(self, session_id: str) -> list[str]:
        """Ids of the sessions whose parent is ``session_id``, oldest first (the
        ``sessions_parent`` index; an unknown id has none)."""
        rows = self._read(
            "SELECT session_id FROM sessions WHERE parent_id = ? ORDER BY created_at, session_id",
            (session_id,),
        )
        return [row[0] for row in rows]

    def session_version(self, session_id: str) -> int | None:
        """The stored version of a session, or ``None`` (one indexed read)."""
        return self._locked_read(lambda conn: stored_version(conn, session_id))

    def delete_session(self, session_id: str, *, expected_version: int | None = None) -> bool:
        """Remove a session and everything it owns; ``False`` if it was not there.

        Refused while another writer's turn lease is live, and when ``expected_version`` is
        given and the store holds another.
        """
        with self._write(sessions=[session_id], memory=[session_id], collects=True) as conn:
            version = stored_version(conn, session_id)
            if version is None:
                return False
            check_writable(
                conn,
                session_id,
                version if expected_version is None else expected_version,
                holder=None,
                now=utcnow(),
            )
            conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            # Before the chains: a call may ride on a node row that another session keeps.
            delete_session_calls(conn, session_id)
            # Messages are stored once: another session's chain may still pass through them.
            delete_session_chains(conn, session_id)
            for table in ("slots", "memory_log"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            delete_checkpoints(conn, session_id, None)
            log_change(conn, session_id, "destroyed", self._origin)
            return True

    # -- versions, leases and the change feed ---------------------------------------------

    def acquire_lease(self, session_id: str, holder: str, *, ttl: float) -> int:
        """Take the session's turn lease (``SessionBusyError`` if another holder's is live);
        return the stored version."""
        with self._write(sessions=[session_id]) as conn:
            return acquire_lease(conn, session_id, holder, ttl, utcnow())

    def renew_lease(self, session_id: str, holder: str, *, ttl: float) -> bool:
        """Extend ``holder``'s lease; ``False`` if it lost it."""
        with self._write() as conn:
            return renew_lease(conn, session_id, holder, ttl, utcnow())

    def release_lease(self, session_id: str, holder: str) -> None:
        """Give ``holder``'s lease up."""
        with self._write() as conn:
            release_lease_row(conn, session_id, holder)

    @property
    def origin(self) -> str:
        """This store object's name in the change feed (a random token)."""
        return self._origin

    def watch_token(self) -> int:
        """``PRAGMA data_version``: changes when another connection commits to the file."""
        return int(
            self._locked_read(lambda conn: conn.execute("PRAGMA data_version").fetchone())[0]
        )

    def changes_since(self, seq: int) -> list[ChangeRecord]:
        """Change-feed rows after ``seq``, oldest first."""
        return self._locked_read(lambda conn: read_changes(conn, seq))

    def latest_change(self) -> int:
        """The newest change-feed position (0 when empty)."""
        row = self._locked_read(
            lambda conn: conn.execute("SELECT coalesce(max(seq), 0) FROM change_log").fetchone()
        )
        return int(row[0])

    # -- turns, messages and slots ------------------------------------------------------------

    def commit(
        self,
        session: SessionRecord,
        *,
        messages: Sequence[Message] = (),
        links: Sequence[LinkRecord] = (),
        slots: Sequence[SlotRecord] = (),
        pending: PendingToolCall | None = None,
        lease_holder: str | None = None,
        change: str = "turn",
        calls: Sequence[ModelCall | CallNote] = (),
        release_lease: bool = False,
        checkpoint: CkptMeta | None = None,
        memory: Sequence[MemoryWrite] = (),
    ) -> int:
        """Write messages, links, slots, a pending call, model-call records and the session
        record in one transaction, if the store still holds ``session.version``; return the
        new version. ``release_lease`` gives ``lease_holder``'s turn lease up in the same
        transaction (the last write of a turn); ``checkpoint`` (its parent set to the session's
        latest checkpoint and its ``memory_version`` to the session's, both read in the same
        transaction) and ``memory`` (``(key, value, metadata)`` writes, or
        :class:`~agcore_lab.store.base.MemoryIfUnset` ones: stored only if their key has no
        live entry, and marked ``written`` once the commit is stored) are stored in it too."""
        sid = session.session_id
        encoded = [encoded_write(sid, write) for write in memory]
        touched = [sid] if encoded else []
        with self._write(sessions=[sid], memory=touched, shares=True) as conn:
            now = utcnow()  # taken in the write (after any wait for the lock)
            version, seed = update_session_leased(
                conn, session, holder=lease_holder, now=now, release=release_lease
            )
            # A turn's common call rides on its answer's node row (SQLite); the rest get rows.
            # (``()`` when recording is off: no call at all; else the count comes from there)
            riding, fresh, count = (
                node_calls(conn, calls, links) if calls is not _NO_CALLS else ({}, {}, 0)
            )
            renamed = insert_chain(conn, sid, messages, links, riding, seed)
            if count:
                rest = (
                    ()
                    if len(riding) == count
                    else [c for c in calls if c.response is None or c.response.id not in riding]
                )
                if rest or fresh:
                    insert_calls(conn, rest, home_parents(links, renamed) if rest else {}, fresh)
            if pending is not None:
                insert_pending(conn, pending)
            conn.executemany(
                UPSERT_SLOT, [slot_values(follow_renamed(slot, renamed), sid) for slot in slots]
            )
            changes: list[tuple[str, str | None]] = [(change, None)]
            memory_at = None
            if checkpoint is not None:  # its parent and memory version, read in this write
                _, memory_at = insert_turn_checkpoint(conn, checkpoint)
                changes.append(("checkpoint", checkpoint.ckpt_id))
            if len(changes) > 1 and getattr(conn, "dialect", "sqlite") != "postgresql":
                log_changes(conn, sid, changes, self._origin)  # one INSERT of both rows
            else:  # PostgreSQL: each row takes the feed's order lock
                for kind, ckpt_id in changes:
                    log_change(conn, sid, kind, self._origin, ckpt_id=ckpt_id)
            outcomes = (
                append_writes(conn, sid, encoded, fresh_iso(now), memory_at) if encoded else None
            )
        if outcomes is not None:  # stored: the conditional writes say whether they were
            for write, wrote in zip(memory, outcomes, strict=True):
                if isinstance(write, MemoryIfUnset):
                    write.written = wrote
        return version

    def load_slots(self, session_id: str) -> list[SlotRecord]:
        """The session's slots, in creation order."""
        rows = self._read(
            "SELECT * FROM slots WHERE session_id = ? ORDER BY created_at, slot_id", (session_id,)
        )
        return [slot_from_row(r) for r in rows]

    def load_chain(self, head_node_id: str) -> list[tuple[LinkRecord, Message]]:
        """The chain ending at ``head_node_id``, oldest first (one recursive query)."""
        return self._locked_read(
            lambda conn: read_chain(conn, head_node_id), "messages", head_node_id
        )

    def load_chain_history(self, head_node_id: str) -> tuple[MessageHistory, dict[int, str]]:
        """:meth:`load_chain` as a compact history and the chain nodes placed by links
        (``{index: node_id}``), without making an object per plain message (one recursive
        query; how a session with nothing live loads its slots)."""
        return self._locked_read(
            lambda conn: read_chain_history(conn, head_node_id), "messages", head_node_id
        )

    def load_chain_tail(self, head_node_id: str, limit: int) -> list[tuple[LinkRecord, Message]]:
        """The newest ``limit`` nodes of the chain ending at ``head_node_id``, oldest first
        (one recursive query that stops after ``limit`` steps)."""
        check_count(limit, "limit", minimum=1)
        return self._locked_read(
            lambda conn: read_chain_tail(conn, head_node_id, limit), "messages", head_node_id
        )

    # -- checkpoints ------------------------------------------------------------------------

    def put_checkpoint(self, ckpt: CkptMeta, *, expected_version: int | None = None) -> None:
        """Store one checkpoint row (of a session still at ``expected_version``, if given)."""
        with self._write(sessions=[ckpt.session_id]) as conn:
            version = stored_version(conn, ckpt.session_id)
            if version is None:
                raise SessionNotFoundError(
                    "no such session in the store", session_id=ckpt.session_id
                )
            if expected_version is not None and version != expected_version:
                check_writable(conn, ckpt.session_id, expected_version, holder=None, now=utcnow())
            insert_checkpoint(conn, ckpt)
            log_change(conn, ckpt.session_id, "checkpoint", self._origin, ckpt_id=ckpt.ckpt_id)

    def list_checkpoints(
        self,
        session_id: str | None = None,
        *,
        limit: int | None = None,
        before: str | int | None = None,
    ) -> list[CkptMeta]:
        """Checkpoints of one session (or all), newest first; at most ``limit`` of them, and
        only those older than checkpoint ``before`` (an id) or of turns before ``before`` (an
        int) when given."""
        where, params, limit = checkpoint_page(session_id, limit, before)

        def read(conn: Any) -> list[CkptMeta]:
            if _postgres(conn):
                return read_checkpoints(conn, where, params, limit)
            return list_lean_checkpoints(conn, session_id, before, limit)

        return self._locked_read(read, "checkpoints", session_id)

    def get_checkpoint(self, ckpt_id: str) -> CkptMeta | None:
        """One checkpoint by id, or ``None``."""

        def read(conn: Any) -> list[CkptMeta]:
            if _postgres(conn):
                return read_checkpoints(conn, "ckpt_id = ?", [ckpt_id])
            if not isinstance(ckpt_id, str):  # asked as before, so that a bad id is named
                return read_checkpoints(conn, "ckpt_id = ?", [ckpt_id])
            rows = old_rows(conn, None, None, None, ckpt_id=ckpt_id)
            return read_checkpoints(conn, "", [], rows=rows)

        found = self._locked_read(read, "checkpoints", ckpt_id)
        return found[0] if found else None

    def latest_checkpoint_id(self, session_id: str) -> str | None:
        """The id of a session's newest checkpoint, or ``None`` (one index probe)."""
        return self._locked_read(
            lambda conn: latest_checkpoint_id(conn, session_id), "checkpoints", session_id
        )

    def checkpoint_frame_columns(self, session_id: str | None) -> dict[str, Any] | None:
        """The columns of ``Checkpointer.to_dataframe`` (``checkpoint_frame.FRAME_COLUMNS``),
        newest first, built a column at a time from the lean rows of schema 11 (the
        ``checkpoints`` view computes its text columns in SQL, slower); ``{}`` for none;
        ``None`` where the SQL is the way (PostgreSQL, an id kept as text, or a row whose
        counters are not numbers: the SQL shows it as it is)."""

        def read(conn: Any) -> dict[str, Any] | None:
            if _postgres(conn):
                return None
            collecting = gc.isenabled()
            gc.disable()  # columns of many new objects, none garbage (as in list_checkpoints)
            try:
                return frame_columns(conn, session_id)
            finally:
                if collecting:
                    gc.enable()

        return self._locked_read(read, "checkpoints", session_id)

    def delete_checkpoints(self, session_id: str, ckpt_ids: Sequence[str] | None = None) -> int:
        """Delete some or all of a session's checkpoints; return how many went."""
        with self._write(sessions=[session_id]) as conn:
            delete_calls_of_checkpoints(conn, session_id, ckpt_ids)
            return delete_checkpoints(conn, session_id, ckpt_ids)

    def restore_checkpoint(
        self,
        ckpt: CkptMeta,
        session: SessionRecord,
        marker: CkptMeta,
        *,
        create: bool = False,
        lease_holder: str | None = None,
    ) -> int:
        """Give ``session`` the state of ``ckpt`` and store ``marker``, atomically (a new
        session with ``create=True``, else a version-checked update)."""
        sessions = [session.session_id, ckpt.session_id]
        with self._write(sessions=sessions, memory=[session.session_id], shares=True) as conn:
            if create:
                if stored_version(conn, session.session_id) is not None:
                    raise ConflictError(
                        "a session with this id exists", session_id=session.session_id
                    )
                insert_session(conn, session)
            else:
                update_session(conn, session, holder=lease_holder, now=utcnow())
            slots = [
                s.model_copy(update={"session_id": session.session_id}) for s in ckpt.slots.values()
            ]
            replace_slots(conn, session.session_id, slots)
            now = utcnow()
            version = restore_memory(conn, ckpt.session_id, ckpt.memory_version, session, _ts(now))
            pending = restore_pending(conn, session.session_id, ckpt.pending, now)
            insert_checkpoint(
                conn, marker.model_copy(update={"memory_version": version, "pending": pending})
            )
            if create:
                log_change(
                    conn,
                    ckpt.session_id,
                    "fork",
                    self._origin,
                    ckpt_id=marker.ckpt_id,
                    new_session_id=session.session_id,
                )
            else:
                log_change(
                    conn, session.session_id, "rollback", self._origin, ckpt_id=marker.ckpt_id
                )
            return version

    # -- model calls --------------------------------------------------------------------------

    def insert_calls(self, calls: Sequence[ModelCall | CallNote]) -> None:
        """Store model-call records in a write of their own (failed turns, summaries)."""
        if not calls:
            return
        with self._write(shares=True) as conn:
            insert_calls(conn, calls)

    def list_calls(
        self,
        session_id: str | None = None,
        *,
        call_id: str | None = None,
        turn_index: int | None = None,
        last: int | None = None,
    ) -> list[ModelCall]:
        """Model calls (of one session, one turn, or one id), oldest first; the newest
        ``last`` when given."""
        with self.transaction(write=False) as conn:
            return read_calls(
                conn, session_id=session_id, call_id=call_id, turn_index=turn_index, last=last
            )

    # -- memory -----------------------------------------------------------------------------

    def memory_set(
        self, session_id: str, key: str, value: JsonValue, metadata: dict[str, JsonValue]
    ) -> MemoryEntry:
        """Set ``key`` (keeping its first ``created_at``); return the stored entry."""
        value_json, metadata_json = memory_json(session_id, key, value, metadata)
        with self._write(memory=[session_id]) as conn:
            return write_memory(conn, session_id, key, value_json, metadata_json, _ts(utcnow()))

    def memory_delete(self, session_id: str, key: str) -> bool:
        """Delete ``key``; ``False`` if it was not set."""
        with self._write(memory=[session_id]) as conn:
            return delete_memory(conn, session_id, key, _ts(utcnow()))

    def memory_entries(
        self, session_id: str, *, at_version: int | None = None
    ) -> list[MemoryEntry]:
        """Live entries sorted by key; as they were at ``at_version`` when given."""
        return self._locked_read(
            lambda conn: read_memory(conn, session_id, at_version), "memory_log", session_id
        )

    def memory_version(self, session_id: str) -> int:
        """The number of memory writes so far."""
        return self._locked_read(lambda conn: latest_version(conn, session_id))
