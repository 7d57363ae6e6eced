"""Moving a lab between stores: ``migrate_store(src, dst)`` (``agcore-lab migrate SRC DST``).

Copies everything a lab holds — sessions, message chains, slots, checkpoints, memory, pending
tool calls, model-call records, vector stores and knowledge graphs — from one store to
another, SQLite to PostgreSQL or back (or SQLite to SQLite, PostgreSQL to PostgreSQL). The
change feed is not copied: it is news for the views watching the source, not state.

- The source is read in one consistent snapshot; the destination is written in one
  transaction, so a failed copy leaves it as it was.
- Tables are copied column by column, by name, whichever order the backends keep them in
  (a table a newer migration added travels too, as long as both stores have it); vector
  stores and graphs go through their backends' own readers and writers, because the two
  backends lay vectors out differently.
- Every count is checked in the destination before the commit: rows per table, documents
  per vector namespace, entities and relations per graph.
- A destination that holds anything is refused unless ``force=True``, which empties it first
  (in the same transaction).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from agcore_lab.errors import ConflictError, InvalidInputError, StorageError
from agcore_lab.store._graph import read_graph, upsert_entities, upsert_relations
from agcore_lab.store._pg_vectors import insert_pg_vectors, read_pg_vectors
from agcore_lab.store._sqlite_nodes import (
    BASE_TABLES,
    OLD_TABLES,
    clear_old_table,
    write_old_table,
)
from agcore_lab.store._vectors import insert_vectors, read_vectors
from agcore_lab.store.sqlite import SqliteStore

__all__ = ["MigrationReport", "Progress", "migrate_store"]

Progress = Callable[[str, int, int], None]
"""Called as ``progress(what, done, total)`` while a long table or namespace is copied."""

# Not state: bookkeeping of each store, and the change feed.
_OWN = {"agcore_schema", "change_log", "sqlite_sequence"}
# Each store's own, not copied (cleared with the rest by ``force``): a SQLite file's blob pins
# (schema 13) are written by its own connections as they use the blobs.
_PER_STORE = {"call_blob_pins"}
# Copied through the backends' readers and writers, not row by row.
_VECTORS = {"vector_namespaces", "vector_docs", "vector_blocks", "vectors"}
_GRAPHS = ("kg_entities", "kg_entity_tags", "kg_relations")


@dataclass
class MigrationReport:
    """What :func:`migrate_store` copied, each count checked in the destination.

    Attributes:
        source, destination: The two stores (passwords hidden).
        tables: Rows per table.
        vectors: Documents per vector-store namespace.
        graphs: ``(entities, relations)`` per knowledge-graph namespace.
    """

    source: str
    destination: str
    tables: dict[str, int] = field(default_factory=dict)
    vectors: dict[str, int] = field(default_factory=dict)
    graphs: dict[str, tuple[int, int]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The report as text lines."""
        out = [f"copied {self.source} -> {self.destination}"]
        out += [f"  {name}: {count}" for name, count in self.tables.items()]
        out += [f"  vectors {ns!r}: {n} documents" for ns, n in self.vectors.items()]
        out += [
            f"  graph {ns!r}: {e} entities, {r} relations" for ns, (e, r) in self.graphs.items()
        ]
        out.append("verified: every count matches in the destination")
        return out


def _is_pg(conn: Any) -> bool:
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def _tables(conn: Any) -> set[str]:
    if _is_pg(conn):
        sql = (
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        )
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    names = {row[0] for row in conn.execute(sql).fetchall()}
    if not _is_pg(conn) and "chain_nodes" in names:  # schema 11: views stand for the old tables
        names = (names - BASE_TABLES) | set(OLD_TABLES)
    return names


def _columns(conn: Any, table: str) -> list[str]:
    if _is_pg(conn):
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = ? ORDER BY ordinal_position",
            (table,),
        ).fetchall()
        return [row[0] for row in rows]
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})").fetchall()]


def _count(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> int:
    return int(conn.execute(sql, params).fetchone()[0])


def _rows(conn: Any, sql: str, batch: int) -> Iterator[list[tuple[Any, ...]]]:
    """The query's rows, ``batch`` at a time (a server-side cursor on PostgreSQL)."""
    if _is_pg(conn):
        with conn.raw.cursor(name="agcore_migrate") as cursor:
            cursor.execute(sql)
            while rows := cursor.fetchmany(batch):
                yield [tuple(r) for r in rows]
        return
    cursor = conn.execute(sql)
    while rows := cursor.fetchmany(batch):
        yield [tuple(r) for r in rows]


def _insert(conn: Any, table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    names = ", ".join(columns)
    if _is_pg(conn):
        with conn.raw.cursor().copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    if table in OLD_TABLES:
        write_old_table(conn, table, columns, rows)
        return
    marks = ", ".join("?" * len(columns))
    conn.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)


def _vector_namespaces(conn: Any, tables: set[str]) -> list[tuple[str, int, str]]:
    if "vector_namespaces" not in tables:
        return []
    rows = conn.execute(
        "SELECT namespace, dim, created_at FROM vector_namespaces ORDER BY namespace"
    ).fetchall()
    return [(r[0], int(r[1]), r[2]) for r in rows]


def _graph_namespaces(conn: Any, tables: set[str]) -> list[str]:
    if "kg_entities" not in tables:
        return []
    rows = conn.execute(
        "SELECT namespace FROM kg_entities UNION SELECT namespace FROM kg_relations ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def _vector_count(conn: Any, namespace: str) -> int:
    return _count(conn, "SELECT count(*) FROM vectors WHERE namespace = ?", (namespace,))


def _graph_count(conn: Any, namespace: str) -> tuple[int, int]:
    return (
        _count(conn, "SELECT count(*) FROM kg_entities WHERE namespace = ?", (namespace,)),
        _count(conn, "SELECT count(*) FROM kg_relations WHERE namespace = ?", (namespace,)),
    )


def _held(conn: Any, tables: set[str]) -> dict[str, int]:
    """Rows the destination holds now, per table of lab state (empty tables left out)."""
    counts = {t: _count(conn, f"SELECT count(*) FROM {t}") for t in sorted(tables - _OWN)}
    return {t: n for t, n in counts.items() if n}


def _open(target: SqliteStore | str | os.PathLike[str], role: str) -> tuple[SqliteStore, bool]:
    """The store ``target`` names, and whether this module opened it (and closes it)."""
    if isinstance(target, SqliteStore):
        return target, False
    from agcore_lab.store.open import open_store

    url = os.fspath(target)
    if role == "source":
        _check_source_exists(url)
    store = open_store(url)
    assert isinstance(store, SqliteStore)
    return store, True


def _check_source_exists(url: str) -> None:
    from agcore_lab.store.open import split_postgres_url
    from agcore_lab.store.postgres import redact_url

    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if (server := split_postgres_url(url)) is not None:
        from agcore_lab.store.pg_info import schema_exists

        if not schema_exists(*server):  # opening it would create an empty one
            raise InvalidInputError(
                f"no source store in schema {server[1]!r} at {redact_url(server[0])}; check "
                "the URL (?schema=NAME)"
            )
        return
    if url in (":memory:", "sqlite://", "sqlite:///:memory:"):
        raise InvalidInputError("the source is a new in-memory database: there is nothing to copy")
    if scheme == "sqlite":
        rest = url.split("://", 1)[1]
        if not rest.startswith("/"):
            return  # a malformed URL: open_store says what is wrong with it
        path = unquote(rest[1:].split("?", 1)[0])
    elif scheme:
        return  # a scheme no backend serves: open_store says so
    else:
        path = url
    if not Path(path).is_file():
        raise InvalidInputError(f"no source database at {path!r}; check the path or URL")


def _name(store: SqliteStore) -> str:
    schema = getattr(store, "schema", None)
    return f"{store.path} (schema {schema})" if schema else store.path


def migrate_store(
    source: SqliteStore | str | os.PathLike[str],
    destination: SqliteStore | str | os.PathLike[str],
    *,
    force: bool = False,
    batch: int = 5000,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy a whole lab from ``source`` to ``destination`` and check every count.

    Args:
        source: The store to copy (a store URL, a path, or an open store). It is opened as
            any store is (an older schema is brought up to date first); nothing in it changes.
        destination: The store to fill (created when missing).
        force: Empty a destination that holds anything first, instead of refusing it.
        batch: Rows written per statement (and between two ``progress`` calls).
        progress: Called while long tables and namespaces are copied.

    Returns:
        The counts copied, each checked in the destination.

    Raises:
        InvalidInputError: No source database, the same store twice, or a ``batch`` < 1.
        ConflictError: The destination holds data and ``force`` is not set (nothing written).
        StorageError: The stores cannot be read or written, a table of the source is missing
            from the destination (upgrade agcore_lab there), or a count does not match
            (nothing is committed then).

    Example:
        >>> import tempfile, pathlib
        >>> from agcore_lab.store.sqlite import SqliteStore
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> SqliteStore(folder / "a.db").close()
        >>> migrate_store(folder / "a.db", folder / "b.db").tables["sessions"]
        0
    """
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise InvalidInputError(f"batch must be an int >= 1, got {batch!r}")
    src, close_src = _open(source, "source")
    try:
        dst, close_dst = _open(destination, "destination")
        try:
            if _name(src) == _name(dst) and src.path != ":memory:":
                raise InvalidInputError(
                    f"the source and the destination are one store: {_name(src)}"
                )
            return _copy(src, dst, force=force, batch=batch, progress=progress)
        finally:
            if close_dst:
                dst.close()
    finally:
        if close_src:
            src.close()


def _copy(
    src: SqliteStore, dst: SqliteStore, *, force: bool, batch: int, progress: Progress | None
) -> MigrationReport:
    report = MigrationReport(source=_name(src), destination=_name(dst))
    tell = progress or (lambda what, done, total: None)
    with src.transaction(write=False) as read, dst.transaction() as write:
        if _is_pg(read):  # one snapshot of every table (must be the first statement)
            read.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        src_tables, dst_tables = _tables(read), _tables(write)
        plain = sorted(src_tables - _OWN - _VECTORS - set(_GRAPHS) - _PER_STORE)
        missing = [t for t in plain if t not in dst_tables]
        if missing:
            raise StorageError(
                f"the destination has no table {', '.join(missing)}: it runs an older "
                "agcore_lab; upgrade it there first",
                destination=report.destination,
            )
        held = _held(write, dst_tables)
        if held and not force:
            what = ", ".join(f"{n} {t}" for t, n in held.items())
            raise ConflictError(
                f"the destination is not empty ({what}); pass --force (force=True) to "
                "replace what it holds",
                destination=report.destination,
            )
        for table in held:
            if table in OLD_TABLES and not _is_pg(write):
                clear_old_table(write, table)
            else:
                write.execute(f"DELETE FROM {table}")
        for table in plain:
            report.tables[table] = _copy_table(read, write, table, batch, tell)
        for namespace, dim, created_at in _vector_namespaces(read, src_tables):
            report.vectors[namespace] = _copy_vectors(
                read, write, namespace, dim, created_at, batch, tell
            )
        for namespace in _graph_namespaces(read, src_tables):
            entities, relations = read_graph(read, namespace)
            upsert_entities(write, namespace, entities)
            upsert_relations(write, namespace, relations)
            report.graphs[namespace] = (len(entities), len(relations))
            if (size := len(entities) + len(relations)) > batch:
                tell(f"graph {namespace!r}", size, size)
        _verify(read, write, report)
    return report


def _copy_table(read: Any, write: Any, table: str, batch: int, tell: Progress) -> int:
    columns = _columns(read, table)
    absent = sorted(set(columns) - set(_columns(write, table)))
    if absent:
        raise StorageError(
            f"the destination's table {table} has no column {', '.join(absent)}: it runs an "
            "older agcore_lab; upgrade it there first",
            table=table,
        )
    total = _count(read, f"SELECT count(*) FROM {table}")
    done = 0
    for rows in _rows(read, f"SELECT {', '.join(columns)} FROM {table}", batch):
        _insert(write, table, columns, rows)
        done += len(rows)
        if total > batch:
            tell(table, done, total)
    return done


def _copy_vectors(
    read: Any, write: Any, namespace: str, dim: int, created_at: str, batch: int, tell: Progress
) -> int:
    reader = read_pg_vectors if _is_pg(read) else read_vectors
    ids, records, matrix = reader(read, namespace, dim)
    writer = insert_pg_vectors if _is_pg(write) else _insert_sqlite_vectors
    for start in range(0, len(ids), batch):
        stop = min(start + batch, len(ids))
        rows = [
            (doc_id, content, json.loads(metadata_json), mime_type)
            for doc_id, (content, metadata_json, mime_type) in zip(
                ids[start:stop], records[start:stop], strict=True
            )
        ]
        writer(write, namespace, rows, matrix[start:stop], created_at)
        if len(ids) > batch:
            tell(f"vectors {namespace!r}", stop, len(ids))
    return len(ids)


def _insert_sqlite_vectors(
    conn: Any, namespace: str, rows: Any, vectors: Any, created_at: str
) -> None:
    # rows of (id, content, metadata, MIME type), as insert_pg_vectors takes them
    ids = [row[0] for row in rows]
    columns = ([row[1] for row in rows], [row[2] for row in rows], [row[3] for row in rows])
    insert_vectors(conn, namespace, ids, columns, vectors, created_at)


def _verify(read: Any, write: Any, report: MigrationReport) -> None:
    wrong = []
    for table, copied in report.tables.items():
        there = _count(write, f"SELECT count(*) FROM {table}")
        if there != copied or _count(read, f"SELECT count(*) FROM {table}") != copied:
            wrong.append(f"{table}: {copied} copied, {there} in the destination")
    for namespace, copied in report.vectors.items():
        if (there := _vector_count(write, namespace)) != copied:
            wrong.append(f"vectors {namespace!r}: {copied} copied, {there} in the destination")
    for namespace, counts in report.graphs.items():
        if (there_graph := _graph_count(write, namespace)) != counts:
            wrong.append(f"graph {namespace!r}: {counts} copied, {there_graph} there")
    if wrong:
        raise StorageError("the copy does not match its source: " + "; ".join(wrong))
