"""Numbered, append-only schema migrations of :class:`~agcore_lab.store.postgres.PostgresStore`.

The tables mirror the SQLite schema column for column (so the same SQL runs on both, see
:mod:`agcore_lab.store._pg_dialect`), with PostgreSQL types: ``BIGINT`` counters, ``DOUBLE
PRECISION`` costs, and text columns in the ``"C"`` collation, so that ids and ISO timestamps sort
byte by byte — time order — whatever the database's locale. Migrations run under a session-level
advisory lock, so several processes starting at once apply each exactly once; a schema newer
than this package knows is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agcore_lab.errors import StorageError

__all__ = ["PG_MIGRATIONS", "apply_pg_migrations"]

_T = 'TEXT COLLATE "C"'

_CORE = f"""
CREATE TABLE sessions (
    session_id        {_T} PRIMARY KEY,
    agent_name        {_T} NOT NULL,
    parent_id         {_T},
    created_at        {_T} NOT NULL,
    updated_at        {_T} NOT NULL,
    turn_index        BIGINT NOT NULL DEFAULT 0,
    current_slot_id   {_T} NOT NULL,
    last_summary_turn BIGINT,
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd          DOUBLE PRECISION NOT NULL DEFAULT 0,
    spend_json        {_T} NOT NULL DEFAULT '{{}}',
    metadata_json     {_T} NOT NULL DEFAULT '{{}}',
    version           BIGINT NOT NULL DEFAULT 0,
    lease_holder      {_T},
    lease_expires_at  {_T}
);
CREATE INDEX sessions_parent ON sessions(parent_id);
CREATE TABLE messages (
    message_id   {_T} PRIMARY KEY,
    session_id   {_T} NOT NULL,
    parent_id    {_T},
    depth        BIGINT,
    role         {_T} NOT NULL,
    content      {_T},
    tool_call_id {_T},
    tool_name    {_T},
    created_us   BIGINT NOT NULL,
    extra_json   {_T}
);
CREATE INDEX messages_session ON messages(session_id);
CREATE INDEX messages_parent ON messages(parent_id);
CREATE TABLE message_links (
    node_id        {_T} PRIMARY KEY,
    parent_node_id {_T},
    message_id     {_T} NOT NULL,
    depth          BIGINT NOT NULL,
    session_id     {_T} NOT NULL
);
CREATE INDEX message_links_session ON message_links(session_id);
CREATE INDEX message_links_message ON message_links(message_id);
CREATE INDEX message_links_parent ON message_links(parent_node_id);
CREATE TABLE slots (
    session_id       {_T} NOT NULL,
    slot_id          {_T} NOT NULL,
    parent_slot_id   {_T},
    fork_point       BIGINT NOT NULL DEFAULT 0,
    merge_base       BIGINT NOT NULL DEFAULT 0,
    mode             {_T} NOT NULL,
    head_node_id     {_T},
    summary_override {_T},
    pinned_json      {_T} NOT NULL DEFAULT '[]',
    recent_window    BIGINT NOT NULL,
    created_at       {_T} NOT NULL,
    updated_at       {_T} NOT NULL,
    PRIMARY KEY (session_id, slot_id)
);
CREATE TABLE memory_log (
    session_id    {_T} NOT NULL,
    version       BIGINT NOT NULL,
    key           {_T} NOT NULL,
    value_json    {_T},
    metadata_json {_T} NOT NULL DEFAULT '{{}}',
    created_at    {_T} NOT NULL,
    updated_at    {_T} NOT NULL,
    deleted       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, version)
);
CREATE INDEX memory_log_key ON memory_log(session_id, key, version);
CREATE VIEW memory AS
    SELECT m.session_id, m.key, m.value_json, m.metadata_json, m.created_at,
           m.updated_at, m.version
    FROM memory_log m
    WHERE m.deleted = 0
      AND m.version = (SELECT max(version) FROM memory_log l
                       WHERE l.session_id = m.session_id AND l.key = m.key);
CREATE TABLE checkpoints (
    session_id        {_T} NOT NULL,
    ckpt_id           {_T} NOT NULL,
    parent_ckpt_id    {_T},
    turn_index        BIGINT NOT NULL,
    created_at        {_T} NOT NULL,
    label             {_T},
    source            {_T} NOT NULL,
    message_count     BIGINT NOT NULL,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    cost_usd          DOUBLE PRECISION NOT NULL,
    agent_name        {_T} NOT NULL,
    current_slot_id   {_T} NOT NULL,
    last_summary_turn BIGINT,
    memory_version    BIGINT NOT NULL,
    slots_json        {_T} NOT NULL,
    spend_json        {_T} NOT NULL,
    pending_json      {_T},
    PRIMARY KEY (session_id, ckpt_id)
);
CREATE INDEX checkpoints_id ON checkpoints(ckpt_id);
CREATE TABLE slot_states (
    state_hash {_T} PRIMARY KEY,
    state_json {_T} NOT NULL
);
CREATE TABLE pending_calls (
    interrupt_id          {_T} PRIMARY KEY,
    session_id            {_T} NOT NULL,
    run_id                {_T} NOT NULL,
    tool_call_id          {_T} NOT NULL,
    tool_name             {_T} NOT NULL,
    tool_args_json        {_T} NOT NULL,
    status                {_T} NOT NULL,
    created_at            {_T} NOT NULL,
    expires_at            {_T},
    decided_at            {_T},
    decision_json         {_T},
    result_json           {_T},
    updated_at            {_T} NOT NULL,
    remaining_json        {_T} NOT NULL DEFAULT '[]',
    previous_interrupt_id {_T},
    previously_executed   INTEGER NOT NULL DEFAULT 0,
    executor              {_T},
    executor_expires_at   {_T}
);
CREATE INDEX pending_calls_session ON pending_calls(session_id, status);
CREATE TABLE change_log (
    seq            BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    session_id     {_T} NOT NULL,
    kind           {_T} NOT NULL,
    ckpt_id        {_T},
    new_session_id {_T},
    origin         {_T} NOT NULL
);
"""


def _m001_core(conn: Any, channel: str) -> None:
    conn.execute(_CORE)


def _m002_notify(conn: Any, channel: str) -> None:
    # Every change row wakes the listeners of this schema (LISTEN <channel>).
    conn.execute(f"""
CREATE FUNCTION agcore_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{channel}', NEW.seq::text);
    RETURN NEW;
END $$;
CREATE TRIGGER change_log_notify AFTER INSERT ON change_log
    FOR EACH ROW EXECUTE FUNCTION agcore_notify_change();
""")


def _m003_model_calls(conn: Any, channel: str) -> None:
    conn.execute(f"""
CREATE TABLE model_calls (
    session_id        {_T} NOT NULL,
    call_id           {_T} NOT NULL,
    slot_id           {_T} NOT NULL,
    turn_index        BIGINT NOT NULL,
    kind              {_T} NOT NULL,
    model             {_T} NOT NULL,
    status            {_T} NOT NULL,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    cost_usd          DOUBLE PRECISION NOT NULL,
    started_us        BIGINT NOT NULL,
    latency_us        BIGINT NOT NULL,
    ttft_us           BIGINT,
    finish_reason     {_T},
    request_hash      BYTEA NOT NULL,
    anchor_node       {_T},
    response_id       {_T},
    parts_json        {_T} NOT NULL,
    detail_json       {_T},
    PRIMARY KEY (session_id, call_id)
);
CREATE TABLE call_blobs (
    hash {_T} PRIMARY KEY,
    body {_T} NOT NULL
);
""")


def _m004_versioned_state(conn: Any, channel: str) -> None:
    # Pending calls carry the version of their stored state; slots their merge strategy.
    conn.execute(
        f"ALTER TABLE pending_calls ADD COLUMN state_version BIGINT; "
        f"ALTER TABLE slots ADD COLUMN merge_strategy {_T}"
    )


def _m005_vectors_and_graphs(conn: Any, channel: str) -> None:
    # Vector stores (one row per document, the unit vector as little-endian float32 bytes)
    # and knowledge graphs (the SQLite tables, column for column).
    conn.execute(f"""
CREATE TABLE vector_namespaces (
    namespace  {_T} PRIMARY KEY,
    dim        BIGINT NOT NULL,
    created_at {_T} NOT NULL
);
CREATE TABLE vector_docs (
    seq           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    namespace     {_T} NOT NULL,
    doc_id        {_T} NOT NULL,
    source_id     {_T},
    chunk_index   BIGINT,
    start_index   BIGINT,
    end_index     BIGINT,
    mime_type     {_T} NOT NULL,
    content       {_T} NOT NULL,
    metadata_json {_T} NOT NULL,
    embedding     BYTEA NOT NULL
);
CREATE UNIQUE INDEX vector_docs_doc ON vector_docs(namespace, doc_id);
CREATE INDEX vector_docs_namespace ON vector_docs(namespace, seq);
CREATE VIEW vectors AS
    SELECT seq, namespace, doc_id, source_id, chunk_index, start_index, end_index, mime_type,
           content, metadata_json, embedding
    FROM vector_docs;
CREATE TABLE kg_entities (
    namespace       {_T} NOT NULL,
    entity_id       {_T} NOT NULL,
    name            {_T} NOT NULL,
    entity_type     {_T} NOT NULL,
    description     {_T} NOT NULL,
    properties_json {_T} NOT NULL DEFAULT '{{}}',
    PRIMARY KEY (namespace, entity_id)
);
CREATE INDEX kg_entities_type ON kg_entities(namespace, entity_type);
CREATE TABLE kg_entity_tags (
    namespace {_T} NOT NULL,
    entity_id {_T} NOT NULL,
    position  BIGINT NOT NULL,
    tag       {_T} NOT NULL,
    PRIMARY KEY (namespace, entity_id, position)
);
CREATE INDEX kg_entity_tags_tag ON kg_entity_tags(namespace, tag);
CREATE TABLE kg_relations (
    namespace       {_T} NOT NULL,
    source          {_T} NOT NULL,
    relation_type   {_T} NOT NULL,
    target          {_T} NOT NULL,
    weight          DOUBLE PRECISION NOT NULL,
    properties_json {_T} NOT NULL DEFAULT '{{}}',
    PRIMARY KEY (namespace, source, relation_type, target)
);
CREATE INDEX kg_relations_target ON kg_relations(namespace, target);
""")


PG_MIGRATIONS: list[Callable[[Any, str], None]] = [
    _m001_core,
    _m002_notify,
    _m003_model_calls,
    _m004_versioned_state,
    _m005_vectors_and_graphs,  # branch pgdata
]
"""The migrations in order; each gets the connection and the schema's notify channel."""


def apply_pg_migrations(conn: Any, schema: str, channel: str) -> int:
    """Bring ``schema`` up to date (creating it), under an advisory lock; return the version.

    ``conn`` is a psycopg connection in autocommit mode.
    """
    key = f"agcore_lab.schema.{schema}"
    conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
    try:
        with conn.transaction():
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            conn.execute(f'SET LOCAL search_path TO "{schema}"')
            conn.execute("CREATE TABLE IF NOT EXISTS agcore_schema (version BIGINT NOT NULL)")
            row = conn.execute("SELECT max(version) FROM agcore_schema").fetchone()
            version = int(row[0]) if row and row[0] is not None else 0
            if version > len(PG_MIGRATIONS):
                raise StorageError(
                    f"database schema version {version} is newer than this agcore_lab knows "
                    f"({len(PG_MIGRATIONS)}); upgrade agcore_lab",
                    schema_version=version,
                    schema=schema,
                )
            for number in range(version, len(PG_MIGRATIONS)):
                PG_MIGRATIONS[number](conn, channel)
                conn.execute("INSERT INTO agcore_schema (version) VALUES (%s)", (number + 1,))
        return len(PG_MIGRATIONS)
    finally:
        conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))
