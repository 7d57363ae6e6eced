"""``SqliteStore``: the default store, one SQLite file (or ``:memory:``).

WAL journal, a busy timeout, numbered migrations run lazily and idempotently on open, one
connection guarded by a lock (safe from several threads), and ``BEGIN IMMEDIATE`` write
transactions (safe from several processes on one file). Driver errors are wrapped in
:class:`~agcore_lab.errors.StorageError`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import JsonValue, TypeAdapter

from agcore_lab.checks import check_json
from agcore_lab.errors import ConflictError, InvalidInputError, SessionNotFoundError, StorageError
from agcore_lab.ids import utcnow
from agcore_lab.llm.messages import Message
from agcore_lab.llm.usage import ModelSpend
from agcore_lab.store._approvals import (
    as_expired,
    decide_pending,
    expire_overdue,
    insert_pending,
    read_pending,
    restore_pending,
)
from agcore_lab.store._chains import (
    delete_session_chains,
    follow_renamed,
    insert_chain,
    read_chain,
)
from agcore_lab.store._checkpoints import (
    delete_checkpoints,
    insert_checkpoint,
    read_checkpoints,
    replace_slots,
    restore_memory,
    slot_from_row,
    slot_values,
)
from agcore_lab.store._memory import (
    delete_memory,
    latest_version,
    read_memory,
    write_memory,
)
from agcore_lab.store._sqlite_errors import (
    STORE_VALUE_ERRORS,
    check_path,
    check_timeout,
    decoding,
    driver_error,
    value_error,
)
from agcore_lab.store.base import CkptMeta, LinkRecord, MemoryEntry, SessionRecord, SlotRecord
from agcore_lab.store.migrations import apply_migrations
from agcore_lab.store.pending import PendingToolCall

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SqliteStore"]

_SPEND = TypeAdapter(dict[str, ModelSpend])
T = TypeVar("T")


def _ts(value: datetime) -> str:
    return value.isoformat()


def _json(value: Any) -> str:
    # NaN and Infinity are not JSON: SQLite's json functions (and other backends) reject them.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class SqliteStore:
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

    def __init__(
        self, path: str | Path = "agcore.db", *, timeout: float = 10.0, read_only: bool = False
    ) -> None:
        self.path = check_path(path)
        timeout = check_timeout(timeout)
        self._lock = threading.RLock()
        memory = self.path == ":memory:"
        # A file this process may not write (permissions) is opened read-only, not failed.
        unwritable = not memory and Path(self.path).is_file() and not os.access(self.path, os.W_OK)
        self.read_only = (bool(read_only) or unwritable) and not memory
        try:
            if not memory and not self.read_only:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            target = Path(self.path).resolve().as_uri() + "?mode=ro" if self.read_only else None
            self._conn = sqlite3.connect(
                target or self.path,
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,
                uri=target is not None,
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if not memory and not self.read_only:
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self.schema_version = (
                self._conn.execute("PRAGMA user_version").fetchone()[0]
                if self.read_only
                else apply_migrations(self._conn)
            )
        except sqlite3.Error as exc:
            raise driver_error("cannot open SQLite store", exc, self.path) from exc
        except OSError as exc:  # the parent directory cannot be created
            raise StorageError(
                f"cannot create the directory for the SQLite store: {exc}", path=self.path
            ) from exc

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    # -- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise driver_error("cannot start a write", exc, self.path) from exc
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                self._rollback()
                if isinstance(exc, sqlite3.Error):
                    raise driver_error("write failed", exc, self.path) from exc
                if isinstance(exc, STORE_VALUE_ERRORS):
                    raise value_error(exc) from exc
                raise

    def _rollback(self) -> None:
        # SQLite may have rolled back already (SQLITE_FULL, SQLITE_IOERR): ROLLBACK would then
        # fail with "no transaction is active" and hide the real error.
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                cursor = self._conn.execute(sql, params)
                cursor.row_factory = sqlite3.Row
                return cursor.fetchall()
            except sqlite3.Error as exc:
                raise driver_error("read failed", exc, self.path) from exc
            except STORE_VALUE_ERRORS as exc:
                raise value_error(exc) from exc

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction on the store's connection, for code that keeps its own tables
        (such as :class:`~agcore_lab.rag.sqlite_vectors.SqliteVectorStore`).

        ``write=True`` takes the write lock at once (``BEGIN IMMEDIATE``); ``write=False``
        reads one consistent snapshot. The store's lock is held throughout; the transaction
        commits when the block ends and rolls back if it raises. Driver errors are raised
        as :class:`~agcore_lab.errors.StorageError`.

        Example:
            >>> store = SqliteStore(":memory:")
            >>> with store.transaction(write=False) as conn:
            ...     conn.execute("select count(*) from sessions").fetchone()
            (0,)
        """
        if write:
            with self._write() as conn:
                yield conn
            return
        with self._lock:
            try:
                self._conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise driver_error("cannot start a read", exc, self.path) from exc
            try:
                yield self._conn
            except BaseException as exc:
                self._rollback()
                if isinstance(exc, sqlite3.Error):
                    raise driver_error("read failed", exc, self.path) from exc
                if isinstance(exc, STORE_VALUE_ERRORS):
                    raise value_error(exc) from exc
                raise
            self._conn.execute("COMMIT")

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection, for ad-hoc reads (``pd.read_sql``). Do not write through it."""
        return self._conn

    def read_dataframe(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        """Run a read-only query and return a pandas DataFrame.

        Example:
            >>> SqliteStore(":memory:").read_dataframe("select * from sessions").shape
            (0, 13)
        """
        import pandas as pd  # lazy: keep `import agcore_lab` fast

        with self._lock:
            return pd.read_sql_query(sql, self._conn, params=list(params))

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    # -- sessions ---------------------------------------------------------------------------

    @staticmethod
    def _session_row(r: SessionRecord) -> tuple[Any, ...]:
        return (
            r.session_id,
            r.agent_name,
            r.parent_id,
            _ts(r.created_at),
            _ts(r.updated_at),
            r.turn_index,
            r.current_slot_id,
            r.last_summary_turn,
            r.prompt_tokens,
            r.completion_tokens,
            r.cost_usd,
            _SPEND.dump_json(r.spend).decode(),
            _json(r.metadata),
        )

    @staticmethod
    def _session_from(row: sqlite3.Row) -> SessionRecord:
        with decoding("sessions", row["session_id"]):
            return SqliteStore._decode_session(row)

    @staticmethod
    def _decode_session(row: sqlite3.Row) -> SessionRecord:
        return SessionRecord(
            session_id=row["session_id"],
            agent_name=row["agent_name"],
            parent_id=row["parent_id"],
            created_at=datetime.fromisoformat(row["created_at"]),
            updated_at=datetime.fromisoformat(row["updated_at"]),
            turn_index=row["turn_index"],
            current_slot_id=row["current_slot_id"],
            last_summary_turn=row["last_summary_turn"],
            spend=_SPEND.validate_json(row["spend_json"]),
            metadata=json.loads(row["metadata_json"]),
        )

    def create_session(self, record: SessionRecord, *, slots: Sequence[SlotRecord] = ()) -> None:
        """Insert a new session (and its first slots); ``ConflictError`` if its id is taken."""
        with self._write() as conn:
            if conn.execute(
                "SELECT 1 FROM sessions WHERE session_id = ?", (record.session_id,)
            ).fetchone():
                raise ConflictError("a session with this id exists", session_id=record.session_id)
            conn.execute(
                "INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", self._session_row(record)
            )
            conn.executemany(
                "INSERT INTO slots VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [slot_values(slot, record.session_id) for slot in slots],
            )

    def get_session(self, session_id: str) -> SessionRecord | None:
        """The session's record, or ``None``."""
        rows = self._read("SELECT * FROM sessions WHERE session_id = ?", (session_id,))
        return self._session_from(rows[0]) if rows else None

    def list_sessions(self) -> list[SessionRecord]:
        """All sessions, oldest first."""
        rows = self._read("SELECT * FROM sessions ORDER BY created_at, session_id")
        return [self._session_from(r) for r in rows]

    def delete_session(self, session_id: str) -> bool:
        """Remove a session and everything it owns; ``False`` if it was not there."""
        with self._write() as conn:
            gone = conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            # Messages are stored once: another session's chain may still pass through them.
            delete_session_chains(conn, session_id)
            for table in ("slots", "memory_log", "checkpoints"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            return gone.rowcount > 0

    # -- turns, messages and slots ------------------------------------------------------------

    def commit(
        self,
        session: SessionRecord,
        *,
        messages: Sequence[Message] = (),
        links: Sequence[LinkRecord] = (),
        slots: Sequence[SlotRecord] = (),
        pending: PendingToolCall | None = None,
    ) -> None:
        """Write messages, links, slots, a pending call and the session record in one
        transaction."""
        sid = session.session_id
        with self._write() as conn:
            if not conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone():
                raise SessionNotFoundError("no such session in the store", session_id=sid)
            renamed = insert_chain(conn, sid, messages, links)
            if pending is not None:
                insert_pending(conn, pending)
            conn.executemany(
                "INSERT OR REPLACE INTO slots VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [slot_values(follow_renamed(slot, renamed), sid) for slot in slots],
            )
            conn.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                self._session_row(session),
            )

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

    # -- checkpoints ------------------------------------------------------------------------

    def put_checkpoint(self, ckpt: CkptMeta) -> None:
        """Store one checkpoint row."""
        with self._write() as conn:
            if not conn.execute(
                "SELECT 1 FROM sessions WHERE session_id = ?", (ckpt.session_id,)
            ).fetchone():
                raise SessionNotFoundError(
                    "no such session in the store", session_id=ckpt.session_id
                )
            insert_checkpoint(conn, ckpt)

    def list_checkpoints(
        self, session_id: str | None = None, *, limit: int | None = None
    ) -> list[CkptMeta]:
        """Checkpoints of one session (or all), newest first; at most ``limit`` of them."""
        where, params = ("session_id = ?", [session_id]) if session_id else ("1", [])
        return self._locked_read(
            lambda conn: read_checkpoints(conn, where, params, limit), "checkpoints", session_id
        )

    def get_checkpoint(self, ckpt_id: str) -> CkptMeta | None:
        """One checkpoint by id, or ``None``."""
        found = self._locked_read(
            lambda conn: read_checkpoints(conn, "ckpt_id = ?", [ckpt_id]), "checkpoints", ckpt_id
        )
        return found[0] if found else None

    def delete_checkpoints(self, session_id: str, ckpt_ids: Sequence[str] | None = None) -> int:
        """Delete some or all of a session's checkpoints; return how many went."""
        with self._write() as conn:
            return delete_checkpoints(conn, session_id, ckpt_ids)

    def restore_checkpoint(self, ckpt: CkptMeta, session: SessionRecord, marker: CkptMeta) -> int:
        """Give ``session`` the state of ``ckpt`` and store ``marker``, atomically."""
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                self._session_row(session),
            )
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
            return version

    # -- pending tool calls -------------------------------------------------------------------

    def list_pending(
        self, session_id: str | None = None, *, include_resolved: bool = False
    ) -> list[PendingToolCall]:
        """Calls awaiting approval (overdue ones expire first); all of them with
        ``include_resolved``. A read-only store reports overdue calls as ``EXPIRED`` without
        writing."""
        now = self._expire_overdue()
        params: tuple[Any, ...] = () if session_id is None else (session_id,)
        where = "1" if session_id is None else "session_id = ?"
        calls = as_expired(
            self._locked_read(
                lambda conn: read_pending(conn, where, params), "pending_calls", session_id
            ),
            now,
        )
        return [c for c in calls if include_resolved or c.status == "PENDING_APPROVAL"]

    def get_pending(self, interrupt_id: str) -> PendingToolCall | None:
        """One pending-call record, or ``None`` (an overdue call is reported as expired)."""
        now = self._expire_overdue()
        found = self._locked_read(
            lambda conn: read_pending(conn, "interrupt_id = ?", (interrupt_id,)),
            "pending_calls",
            interrupt_id,
        )
        return as_expired(found, now)[0] if found else None

    def _expire_overdue(self) -> datetime:
        now = utcnow()
        if not self.read_only:
            with self._write() as conn:
                expire_overdue(conn, now)
        return now

    def decide_pending(
        self,
        *,
        session_id: str,
        run_id: str,
        interrupt_id: str,
        to_status: str,
        decision: dict[str, JsonValue] | None = None,
        result: JsonValue = None,
        from_status: str = "PENDING_APPROVAL",
    ) -> PendingToolCall:
        """Compare-and-set one call's status; exactly one concurrent caller wins."""
        with self._write() as conn:
            call, error = decide_pending(
                conn,
                session_id=session_id,
                run_id=run_id,
                interrupt_id=interrupt_id,
                to_status=to_status,
                now=utcnow(),
                decision=decision,
                result=result,
                from_status=from_status,
            )
        if error is not None:  # raised after the commit: an expiry found on the way is kept
            raise error
        assert call is not None
        return call

    def _locked_read(
        self, read: Callable[[sqlite3.Connection], T], table: str = "?", key: object = None
    ) -> T:
        with self._lock:
            try:
                with decoding(table, key):
                    return read(self._conn)
            except sqlite3.Error as exc:
                raise driver_error("read failed", exc, self.path) from exc
            except STORE_VALUE_ERRORS as exc:
                raise value_error(exc) from exc

    # -- memory -----------------------------------------------------------------------------

    def memory_set(
        self, session_id: str, key: str, value: JsonValue, metadata: dict[str, JsonValue]
    ) -> MemoryEntry:
        """Set ``key`` (keeping its first ``created_at``); return the stored entry."""
        if not isinstance(key, str):
            raise InvalidInputError(f"memory key must be a string, got {type(key).__name__}")
        check_json(value, f"memory value for {key!r}")
        check_json(metadata, f"memory metadata for {key!r}")
        try:
            value_json, metadata_json = _json(value), _json(metadata)
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidInputError(
                f"memory value for {key!r} is not JSON-serializable: {exc}", session_id=session_id
            ) from exc
        with self._write() as conn:
            return write_memory(conn, session_id, key, value_json, metadata_json, _ts(utcnow()))

    def memory_delete(self, session_id: str, key: str) -> bool:
        """Delete ``key``; ``False`` if it was not set."""
        with self._write() as conn:
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
