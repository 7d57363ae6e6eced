"""Knowledge graphs in SQLite: flat, pandas-friendly entity, tag and relation tables.

``kg_entities`` has one row per entity (``properties_json`` holds its JSON detail),
``kg_entity_tags`` one row per (entity, tag) — indexed by tag, so
``pd.read_sql("select * from kg_entity_tags where tag = 'x'", conn)`` is direct — and
``kg_relations`` one row per ``(source, relation_type, target)``. Every table is keyed by a
``namespace``, so several graphs can live in one file.

Used by :class:`~agcore_lab.kg.sqlite_graph.SqliteGraph`; every function runs inside a
transaction the caller holds. Rows are plain tuples, so this module knows nothing of the
``kg`` types.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

__all__ = [
    "EntityRow",
    "RelationRow",
    "delete_entity",
    "delete_relation",
    "read_graph",
    "upsert_entities",
    "upsert_relations",
]

# (entity_id, name, entity_type, description, properties_json, tags)
EntityRow = tuple[str, str, str, str, str, Sequence[str]]
# (source, relation_type, target, weight, properties_json)
RelationRow = tuple[str, str, str, float, str]


def upsert_entities(conn: sqlite3.Connection, namespace: str, rows: Sequence[EntityRow]) -> None:
    """Add or replace entities, replacing their tags too."""
    ids = [(namespace, row[0]) for row in rows]
    conn.executemany(
        "INSERT OR REPLACE INTO kg_entities (namespace, entity_id, name, entity_type, description, "
        "properties_json) VALUES (?,?,?,?,?,?)",
        [(namespace, *row[:5]) for row in rows],
    )
    conn.executemany("DELETE FROM kg_entity_tags WHERE namespace = ? AND entity_id = ?", ids)
    conn.executemany(
        "INSERT INTO kg_entity_tags (namespace, entity_id, position, tag) VALUES (?,?,?,?)",
        [(namespace, row[0], i, tag) for row in rows for i, tag in enumerate(row[5])],
    )


def upsert_relations(conn: sqlite3.Connection, namespace: str, rows: Sequence[RelationRow]) -> None:
    """Add or replace relations, identified by ``(source, relation_type, target)``."""
    conn.executemany(
        "INSERT OR REPLACE INTO kg_relations (namespace, source, relation_type, target, weight, "
        "properties_json) VALUES (?,?,?,?,?,?)",
        [(namespace, *row) for row in rows],
    )


def delete_entity(conn: sqlite3.Connection, namespace: str, entity_id: str) -> None:
    """Delete an entity, its tags and every relation to or from it."""
    conn.execute(
        "DELETE FROM kg_relations WHERE namespace = ? AND (source = ? OR target = ?)",
        (namespace, entity_id, entity_id),
    )
    for table in ("kg_entity_tags", "kg_entities"):
        conn.execute(
            f"DELETE FROM {table} WHERE namespace = ? AND entity_id = ?", (namespace, entity_id)
        )


def delete_relation(
    conn: sqlite3.Connection, namespace: str, source: str, relation_type: str, target: str
) -> None:
    """Delete one relation."""
    conn.execute(
        "DELETE FROM kg_relations WHERE namespace = ? AND source = ? AND relation_type = ? "
        "AND target = ?",
        (namespace, source, relation_type, target),
    )


def read_graph(
    conn: sqlite3.Connection, namespace: str
) -> tuple[list[EntityRow], list[RelationRow]]:
    """Every entity (with its tags, in order) and relation of the namespace."""
    tags: dict[str, list[str]] = {}
    for entity_id, tag in conn.execute(
        "SELECT entity_id, tag FROM kg_entity_tags WHERE namespace = ? "
        "ORDER BY entity_id, position",
        (namespace,),
    ):
        tags.setdefault(entity_id, []).append(tag)
    entities: list[EntityRow] = [
        (eid, name, etype, desc, props, tags.get(eid, []))
        for eid, name, etype, desc, props in conn.execute(
            "SELECT entity_id, name, entity_type, description, properties_json "
            "FROM kg_entities WHERE namespace = ? ORDER BY entity_id",
            (namespace,),
        )
    ]
    relations: list[RelationRow] = [
        (source, rtype, target, float(weight), props)
        for source, rtype, target, weight, props in conn.execute(
            "SELECT source, relation_type, target, weight, properties_json "
            "FROM kg_relations WHERE namespace = ? ORDER BY source, relation_type, target",
            (namespace,),
        )
    ]
    return entities, relations
