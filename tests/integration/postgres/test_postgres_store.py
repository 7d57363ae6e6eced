"""``PostgresStore`` on a real PostgreSQL server: the conformance suite, the issue's snippet,
migrations started by several processes at once, and a schema newer than this package."""

from __future__ import annotations

import multiprocessing
import uuid
from typing import Any

import pytest

from agcore_lab import StorageError, open_store
from agcore_lab.store.base import Store
from agcore_lab.store.postgres import PostgresStore, redact_url
from agcore_lab.testing import StoreConformance

SNIPPET = """\
from agcore_lab import Agent, ScriptedModel, SessionManager, open_store

store = open_store("postgresql://127.0.0.1:5432/agcore")   # or "sqlite:///lab.db", or a path
manager = SessionManager(store)
sid = manager.create_sync(Agent(name="writer", model=ScriptedModel()))
manager.submit_turn_sync(sid, "hello")
assert manager.checkpointer.list_checkpoints_sync(sid)[0].turn_index == 1
"""


def _schema() -> str:
    return "t_" + uuid.uuid4().hex[:10]


class TestPostgresStore(StoreConformance):
    @pytest.fixture(autouse=True)
    def _server(self, postgres_url: str) -> None:
        self.url = postgres_url

    def make_store(self) -> Store:
        return PostgresStore(self.url, schema=_schema())


def test_the_issue_snippet_runs_as_written(postgres_url: str) -> None:
    # The snippet with the test server's address in place of the default one.
    code = SNIPPET.replace("postgresql://127.0.0.1:5432/agcore", postgres_url)
    assert code != SNIPPET
    namespace: dict[str, Any] = {}
    exec(compile(code, "snippet", "exec"), namespace)
    store = namespace["store"]
    assert isinstance(store, PostgresStore)
    assert store.get_session(namespace["sid"]).turn_index == 1  # type: ignore[union-attr]


def test_open_store_passes_the_schema_and_hides_the_password(postgres_url: str) -> None:
    schema = _schema()
    store = open_store(postgres_url, schema=schema)
    assert isinstance(store, PostgresStore) and store.schema == schema
    assert redact_url("postgresql://u:secret@h:1/db") == "postgresql://u:***@h:1/db"
    with pytest.raises(StorageError) as info:
        PostgresStore("postgresql://nobody:secret@127.0.0.1:1/none", timeout=2)
    assert "secret" not in str(info.value)
    store.close()


def _open(url: str, schema: str, out: Any) -> None:
    try:
        out.put(PostgresStore(url, schema=schema).schema_version)
    except BaseException as exc:
        out.put(repr(exc))


def test_several_processes_migrate_a_new_schema_once(postgres_url: str) -> None:
    schema = _schema()
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_open, args=(postgres_url, schema, out)) for _ in range(4)]
    for proc in procs:
        proc.start()
    versions = [out.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(30)
    store = PostgresStore(postgres_url, schema=schema)
    assert versions == [store.schema_version] * 4
    rows = store.read_dataframe("select version from agcore_schema order by version")
    assert rows["version"].tolist() == list(range(1, store.schema_version + 1))
    store.close()


def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, schema=_schema())
    with store.transaction() as conn:
        conn.execute("INSERT INTO agcore_schema (version) VALUES (?)", (999,))
    with pytest.raises(StorageError, match="upgrade agcore_lab"):
        PostgresStore(postgres_url, schema=store.schema)
    store.drop_schema()
    store.close()


def test_the_docs_show_the_snippet_that_runs() -> None:
    from pathlib import Path

    doc = Path(__file__).resolve().parents[3] / "docs" / "team-lab.md"
    assert SNIPPET in doc.read_text(encoding="utf-8")
