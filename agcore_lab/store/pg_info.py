"""What a PostgreSQL store holds, at a glance (``agcore-lab info --store postgresql://...``).

Reads in a read-only transaction on a plain connection: nothing is created, migrated or
expired, so it is safe on a lab's live server.
"""

from __future__ import annotations

from datetime import datetime

from agcore_lab.errors import InvalidInputError, StorageError
from agcore_lab.ids import utcnow
from agcore_lab.store.info import StoreInfo
from agcore_lab.store.postgres import redact_url

__all__ = ["postgres_info", "schema_exists"]


def schema_exists(url: str, schema: str) -> bool:
    """Whether the server at ``url`` has the schema (a store was opened there once).

    Raises:
        StorageError: The server cannot be reached.
    """
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=10, autocommit=True) as conn:
            row = conn.execute(
                "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
            ).fetchone()
    except psycopg.Error as exc:
        raise StorageError(f"cannot reach PostgreSQL: {exc}", path=redact_url(url)) from exc
    return row is not None


def postgres_info(url: str, schema: str = "agcore") -> StoreInfo:
    """Summarize the store in ``schema`` on the server at ``url`` without changing it.

    Raises:
        InvalidInputError: The server has no such schema (no store there yet).
        StorageError: The server cannot be reached.
    """
    import psycopg

    shown = redact_url(url)
    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            conn.execute("SET TRANSACTION READ ONLY")
            found = conn.execute(
                "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
            ).fetchone()
            if found is None:
                raise InvalidInputError(
                    f"no agcore_lab store in schema {schema!r} at {shown}; check the URL "
                    "(?schema=NAME) or open it once with open_store() to create it"
                )
            conn.execute(f'SET LOCAL search_path TO "{schema}"')
            tables = {
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                    (schema,),
                )
            }

            def count(sql: str) -> int:
                row = conn.execute(sql).fetchone()
                return int(row[0]) if row else 0

            def grouped(sql: str) -> dict[str, int]:
                return {r[0]: int(r[1]) for r in conn.execute(sql)}

            size = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
                (schema,),
            ).fetchone()
            info = StoreInfo(
                path=f"{shown} (schema {schema})",
                file_bytes=int(size[0]) if size else 0,
                schema_version=count("SELECT coalesce(max(version), 0) FROM agcore_schema")
                if "agcore_schema" in tables
                else 0,
                kind="store",
            )
            if "sessions" in tables:
                info.sessions = count("SELECT count(*) FROM sessions")
            if "checkpoints" in tables:
                info.checkpoints = count("SELECT count(*) FROM checkpoints")
            if "pending_calls" in tables:
                now = utcnow()
                for status, expires_at in conn.execute(
                    "SELECT status, expires_at FROM pending_calls"
                ):
                    overdue = (
                        status == "PENDING_APPROVAL"
                        and expires_at is not None
                        and datetime.fromisoformat(expires_at) <= now
                    )
                    key = "EXPIRED" if overdue else status
                    info.pending[key] = info.pending.get(key, 0) + 1
            if "vectors" in tables:
                info.vectors = grouped("SELECT namespace, count(*) FROM vectors GROUP BY 1")
            if "kg_entities" in tables:
                entities = grouped("SELECT namespace, count(*) FROM kg_entities GROUP BY 1")
                relations = grouped("SELECT namespace, count(*) FROM kg_relations GROUP BY 1")
                info.graphs = {
                    ns: (entities.get(ns, 0), relations.get(ns, 0))
                    for ns in {*entities, *relations}
                }
            return info
    except psycopg.Error as exc:
        raise StorageError(f"cannot read PostgreSQL store: {exc}", path=shown) from exc
