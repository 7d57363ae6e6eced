"""``PostgresStore``: one session tree for a whole lab, on a PostgreSQL server (psycopg 3).

Many kernels on many machines share one server: the same sessions, message chains, slots,
checkpoints, memory, approval queue and change feed as :class:`~agcore_lab.store.sqlite.
SqliteStore`, through the same SQL (see :mod:`agcore_lab.store._pg_dialect`) and the same
conformance suite.

- Connections come from a ``psycopg_pool.ConnectionPool`` (``min_size``/``max_size``); a store
  is safe from many threads.
- Writes are transactions that first lock the rows they will change — the session's row
  (``SELECT ... FOR UPDATE``) for the version compare-and-set, leases, checkpoints, rollbacks
  and forks; the pending call's row for a resume or a settle — and only then read, so every
  compare-and-set reads and writes with no other writer of *that row* in between: of any
  number of concurrent resumes across processes and machines exactly one wins. Writers of
  different sessions do not wait for each other (only their change-feed rows are put in
  commit order). The locks and their order are in :mod:`agcore_lab.store._pg_locks`. Reads
  never wait for writers.
- Other processes' changes are announced with ``LISTEN/NOTIFY`` (a trigger on the change
  feed), so a manager's watcher sees them without polling the tables.
- Each store lives in its own schema (``schema="agcore"`` by default), created with its
  numbered migrations on first use; a schema newer than this package is refused.

Needs the ``postgres`` extra: ``pip install "agcore_lab[postgres]"``.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar
from urllib.parse import urlsplit, urlunsplit

from agcore_lab.errors import ConflictError, InvalidInputError, StorageError
from agcore_lab.store._pg_dialect import PgConnection, Row
from agcore_lab.store._pg_locks import take_locks
from agcore_lab.store._pg_schema import apply_pg_migrations
from agcore_lab.store._sqlite_errors import decoding
from agcore_lab.store.sqlite import SqliteStore

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PostgresStore", "redact_url"]

T = TypeVar("T")
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and ``repr``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


class PostgresStore(SqliteStore):
    """The :class:`~agcore_lab.store.base.Store` on a PostgreSQL server.

    Args:
        url: A libpq URL or conninfo (``postgresql://user@host:5432/dbname``).
        schema: The schema that holds this store's tables (lowercase letters, digits, ``_``).
        min_size: Connections the pool keeps open.
        max_size: Connections the pool opens at most.
        timeout: Seconds to wait for a connection (and to connect).

    Raises:
        InvalidInputError: A malformed schema name.
        StorageError: The server cannot be reached, or its schema is newer than this package.

    Example:
        ``PostgresStore("postgresql://127.0.0.1:5432/agcore")`` (or ``open_store(url)``).

    Notes:
        It shares :class:`SqliteStore`'s implementation of the protocol (the statements run
        through a dialect layer); only the connection plumbing differs.
    """

    #: :func:`~agcore_lab.store.threaded.as_async` hops each call to a worker thread: a
    #: network round trip must not block the event loop (bench/store_seam.py).
    async_hop: ClassVar[bool] = True

    def __init__(
        self,
        url: str,
        *,
        schema: str = "agcore",
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 10.0,
    ) -> None:
        if not isinstance(schema, str) or not _SCHEMA.match(schema):
            raise InvalidInputError(
                f"schema {schema!r} must be 1-41 lowercase letters, digits or '_' "
                "(not starting with a digit)"
            )
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise StorageError(
                'PostgresStore needs psycopg 3: pip install "agcore_lab[postgres]"'
            ) from exc
        self._psycopg = psycopg
        self.url, self.schema, self.path = url, schema, redact_url(url)
        self.read_only = False
        self._origin = uuid.uuid4().hex[:12]
        self._channel = f"agcore_{schema}"
        self._write_key = f"agcore_lab.write.{schema}"
        self._listen_lock = threading.Lock()
        self._listen: Any = None
        self._token = 0

        self._timeout = timeout

        def configure(conn: Any) -> None:
            conn.execute(f'SET search_path TO "{schema}"')
            # A write waits this long for another writer's row lock (SQLite's busy timeout).
            conn.execute(f"SET lock_timeout = {max(1, int(timeout * 1000))}")

        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=int(timeout)) as conn:
                self.schema_version = apply_pg_migrations(conn, schema, self._channel)
            self._pool = ConnectionPool(
                url,
                min_size=min_size,
                max_size=max_size,
                timeout=timeout,
                kwargs={"autocommit": True, "connect_timeout": int(timeout)},
                configure=configure,
                open=True,
            )
        except psycopg.Error as exc:
            raise StorageError(
                f"cannot open PostgreSQL store: {exc}", path=self.path, schema=schema
            ) from exc

    def __repr__(self) -> str:
        return f"PostgresStore({self.path!r}, schema={self.schema!r})"

    # -- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _write(
        self,
        *,
        sessions: Sequence[str] = (),
        memory: Sequence[str] = (),
        pending: Sequence[str] = (),
        shares: bool = False,
        collects: bool = False,
    ) -> Iterator[Any]:
        # Row locks, not one lock for the whole schema: writers of different sessions run
        # side by side (see agcore_lab.store._pg_locks for what is locked, in which order).
        errors = self._psycopg.errors
        try:
            with self._pool.connection() as conn, conn.transaction():
                take_locks(
                    conn,
                    sessions=sessions,
                    memory=memory,
                    pending=pending,
                    shares=shares,
                    collects=collects,
                )
                yield PgConnection(conn)
        except errors.UniqueViolation as exc:
            if exc.diag.constraint_name != "sessions_pkey":
                raise StorageError(f"write failed: {exc}", path=self.path) from exc
            # Two writers created the same session id at once: the later one loses, as it
            # would have had it come second.
            raise ConflictError(
                "a session with this id exists", session_id=sessions[0] if sessions else None
            ) from exc
        except errors.LockNotAvailable as exc:
            raise StorageError(
                f"another writer held a lock this write needs for more than {self._timeout:g} "
                "s (the store's timeout); try again",
                path=self.path,
            ) from exc
        except self._psycopg.Error as exc:
            raise StorageError(f"write failed: {exc}", path=self.path) from exc

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._locked_read(lambda conn: conn.execute(sql, params).fetchall())

    def _locked_read(self, read: Callable[[Any], T], table: str = "?", key: object = None) -> T:
        # No BEGIN/COMMIT around a read: under READ COMMITTED each statement reads its own
        # snapshot inside a transaction too, so one would only cost two round trips.
        try:
            with self._pool.connection() as conn, decoding(table, key):
                return read(PgConnection(conn))
        except self._psycopg.Error as exc:
            raise StorageError(f"read failed: {exc}", path=self.path) from exc

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Any]:
        """One transaction (a :class:`~agcore_lab.store._pg_dialect.PgConnection`), for code
        that keeps its own tables.

        ``write=True`` first takes one advisory lock of the schema that only these
        transactions take: code that reads, then writes its own tables (vector blocks, graph
        rows) needs no locking of its own, as with SQLite's ``BEGIN IMMEDIATE``. The store's
        own writes do not wait for it (they lock rows).
        """
        if write:
            with self._write() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (self._write_key,))
                yield conn
            return
        try:
            with self._pool.connection() as raw, raw.transaction():
                yield PgConnection(raw)
        except self._psycopg.Error as exc:
            raise StorageError(f"read failed: {exc}", path=self.path) from exc

    @property
    def connection(self) -> Any:
        """Not available: a pooled store has no single connection; use ``read_dataframe``."""
        raise StorageError(
            "PostgresStore has no single connection; use read_dataframe() or transaction()",
            path=self.path,
        )

    def read_dataframe(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        """Run a read-only query (``?`` placeholders) and return a pandas DataFrame."""
        import pandas as pd  # lazy: keep `import agcore_lab` fast

        def read(conn: PgConnection) -> tuple[list[str], list[Row]]:
            cursor = conn.execute(sql, params)
            rows = cursor.fetchall()
            return cursor.columns, rows

        columns, rows = self._locked_read(read)
        return pd.DataFrame([list(r) for r in rows], columns=columns)

    def watch_token(self) -> int:
        """A counter of the notifications this store's schema received (``LISTEN``)."""
        with self._listen_lock:
            try:
                if self._listen is None:
                    self._listen = self._psycopg.connect(self.url, autocommit=True)
                    self._listen.execute(f"LISTEN {self._channel}")
                for _ in self._listen.notifies(timeout=0):
                    self._token += 1
            except self._psycopg.Error as exc:
                self._listen = None  # reconnect on the next look
                raise StorageError(f"cannot listen for changes: {exc}", path=self.path) from exc
            return self._token

    def close(self) -> None:
        """Close the pool and the listening connection."""
        with self._listen_lock:
            if self._listen is not None:
                self._listen.close()
                self._listen = None
        self._pool.close()

    def drop_schema(self) -> None:
        """Delete this store's schema and everything in it (for tests and throwaway labs)."""
        with self._pool.connection() as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
