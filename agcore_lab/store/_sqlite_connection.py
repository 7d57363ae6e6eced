"""The connection plumbing of :class:`~agcore_lab.store.sqlite.SqliteStore`.

Opening the file (WAL journal, busy timeout, read-only files, migrations), write transactions
(``BEGIN IMMEDIATE``, a rollback that never hides the real error), locked reads, and the
driver errors turned into :class:`~agcore_lab.errors.StorageError` that name what happened.
The store's protocol methods sit on top of these (:mod:`agcore_lab.store.sqlite`); another
backend that runs the same statements replaces only this layer.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from agcore_lab.errors import StorageError
from agcore_lab.store._sqlite_errors import (
    STORE_VALUE_ERRORS,
    check_path,
    check_timeout,
    decoding,
    driver_error,
    value_error,
)
from agcore_lab.store.migrations import apply_migrations

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SqliteConnection"]

T = TypeVar("T")


class SqliteConnection:
    """One SQLite connection behind a lock, with transactions (see the module docstring)."""

    path: str
    read_only: bool
    schema_version: int
    _origin: str

    def __init__(
        self, path: str | Path = "agcore.db", *, timeout: float = 10.0, read_only: bool = False
    ) -> None:
        self.path = check_path(path)
        timeout = check_timeout(timeout)
        self._lock = threading.RLock()
        self._origin = uuid.uuid4().hex[:12]  # names this store object in the change feed
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

    def _write(
        self,
        *,
        sessions: Sequence[str] = (),
        memory: Sequence[str] = (),
        pending: Sequence[str] = (),
        shares: bool = False,
        collects: bool = False,
    ) -> AbstractContextManager[sqlite3.Connection]:
        # What the write touches (session rows, memory logs, pending calls; whether it points
        # at rows other sessions own, or deletes such rows) is declared for backends with row
        # locks (PostgresStore). SQLite needs none of it: BEGIN IMMEDIATE serializes writers.
        return _WriteTransaction(self)

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
            >>> from agcore_lab.store.sqlite import SqliteStore
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
            >>> from agcore_lab.store.sqlite import SqliteStore
            >>> SqliteStore(":memory:").read_dataframe("select * from sessions").shape
            (0, 16)
        """
        import pandas as pd  # lazy: keep `import agcore_lab` fast

        with self._lock:
            return pd.read_sql_query(sql, self._conn, params=list(params))

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

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


class _WriteTransaction:
    """One ``BEGIN IMMEDIATE`` write of a :class:`SqliteConnection`, under its lock: committed
    when the block ends, rolled back if it raises (the error as the store raises it). A
    plain context manager, not a generator one: every write of the store enters it."""

    __slots__ = ("_store",)

    def __init__(self, store: SqliteConnection) -> None:
        self._store = store

    def __enter__(self) -> sqlite3.Connection:
        store = self._store
        store._lock.acquire()
        try:
            store._conn.execute("BEGIN IMMEDIATE")
        except BaseException as exc:
            store._lock.release()
            if isinstance(exc, sqlite3.Error):
                raise driver_error("cannot start a write", exc, store.path) from exc
            raise
        return store._conn

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        store = self._store
        try:
            if exc is None:
                try:
                    store._conn.execute("COMMIT")
                    return
                except BaseException as failed:
                    exc = failed
                    if not isinstance(failed, sqlite3.Error):
                        store._rollback()
                        raise
            store._rollback()
            if isinstance(exc, sqlite3.Error):
                raise driver_error("write failed", exc, store.path) from exc
            if isinstance(exc, STORE_VALUE_ERRORS):
                raise value_error(exc) from exc
        finally:
            store._lock.release()
