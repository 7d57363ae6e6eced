"""What a store file holds, at a glance (``agcore-lab info DB``).

Reads the file without writing to it (read-only mode: nothing is migrated or expired), so it
is safe on a database another process is using, and on a copy you may not change.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from agcore_lab.errors import InvalidInputError
from agcore_lab.store.sqlite import SqliteStore

__all__ = ["StoreInfo", "store_info"]


@dataclass
class StoreInfo:
    """Counts and sizes of one SQLite store file.

    Attributes:
        path: The file.
        file_bytes: Its size on disk (with its write-ahead log, if any).
        schema_version: ``PRAGMA user_version`` (the number of migrations applied).
        sessions, checkpoints: Row counts.
        pending: Pending tool calls by status (overdue ones counted as ``EXPIRED``).
        vectors: Documents per vector-store namespace.
        graphs: ``(entities, relations)`` per knowledge-graph namespace.
        kind: What ``path`` names: ``"file"``, or ``"store"`` for a PostgreSQL schema
            (whose ``file_bytes`` are its tables' and indexes' bytes on the server).
    """

    path: str
    file_bytes: int
    schema_version: int
    sessions: int = 0
    checkpoints: int = 0
    pending: dict[str, int] = field(default_factory=dict)
    vectors: dict[str, int] = field(default_factory=dict)
    graphs: dict[str, tuple[int, int]] = field(default_factory=dict)
    kind: str = "file"

    def lines(self) -> list[str]:
        """The summary as text lines."""
        pending = ", ".join(f"{n} {status}" for status, n in sorted(self.pending.items()))
        vectors = ", ".join(f"{ns}: {n}" for ns, n in sorted(self.vectors.items()))
        graphs = ", ".join(
            f"{ns}: {e} entities, {r} relations" for ns, (e, r) in sorted(self.graphs.items())
        )
        return [
            f"{self.kind}: {self.path} ({self.file_bytes:,} bytes)",
            f"schema version: {self.schema_version}",
            f"sessions: {self.sessions}",
            f"checkpoints: {self.checkpoints}",
            f"pending tool calls: {sum(self.pending.values())}"
            + (f" ({pending})" if pending else ""),
            f"vectors: {sum(self.vectors.values())}" + (f" ({vectors})" if vectors else ""),
            f"graphs: {len(self.graphs)}" + (f" ({graphs})" if graphs else ""),
        ]


def store_info(path: str | Path) -> StoreInfo:
    """Summarize the store file at ``path`` without changing it.

    Raises:
        InvalidInputError: There is no such file.
        StorageError: The file is not an agcore_lab database.

    Example:
        >>> import tempfile, pathlib
        >>> db = pathlib.Path(tempfile.mkdtemp()) / "x.db"
        >>> SqliteStore(db).close()
        >>> store_info(db).sessions
        0
    """
    file = Path(path)
    if not file.is_file():
        raise InvalidInputError(f"no database file at {str(file)!r}; check the path")
    store = SqliteStore(file, read_only=True)
    try:
        tables = {
            row[0]
            for row in store.connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
            )
        }

        def count(sql: str) -> int:
            return int(store.connection.execute(sql).fetchone()[0])

        info = StoreInfo(
            path=str(file),
            file_bytes=sum(
                os.path.getsize(f"{file}{extra}")
                for extra in ("", "-wal")
                if os.path.exists(f"{file}{extra}")
            ),
            schema_version=store.schema_version,
            sessions=count("SELECT count(*) FROM sessions") if "sessions" in tables else 0,
            checkpoints=count("SELECT count(*) FROM checkpoints") if "checkpoints" in tables else 0,
        )
        if "pending_calls" in tables:
            for call in store.list_pending(include_resolved=True):
                info.pending[call.status] = info.pending.get(call.status, 0) + 1
        if "vectors" in tables:
            info.vectors = dict(
                store.connection.execute(
                    "SELECT namespace, count(*) FROM vectors GROUP BY namespace"
                ).fetchall()
            )
        if "kg_entities" in tables:
            entities = dict(
                store.connection.execute(
                    "SELECT namespace, count(*) FROM kg_entities GROUP BY namespace"
                ).fetchall()
            )
            relations = dict(
                store.connection.execute(
                    "SELECT namespace, count(*) FROM kg_relations GROUP BY namespace"
                ).fetchall()
            )
            info.graphs = {
                ns: (entities.get(ns, 0), relations.get(ns, 0)) for ns in {*entities, *relations}
            }
        return info
    finally:
        store.close()
