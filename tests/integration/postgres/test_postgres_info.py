"""``agcore-lab info --store postgresql://...``: what a lab's server holds, read without
creating or changing anything."""

from __future__ import annotations

import uuid

import pytest

from agcore_lab import Agent, ScriptedModel, SessionManager
from agcore_lab.cli import main
from agcore_lab.rag import open_vector_store
from agcore_lab.store.postgres import PostgresStore
from agcore_lab.testing.vector_conformance import docs, embed


def test_info_reads_a_postgres_store(
    postgres_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = "i_" + uuid.uuid4().hex[:10]
    store = PostgresStore(postgres_url, schema=schema)
    manager = SessionManager(store, watch_interval=None)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel()))
    manager.submit_turn_sync(sid, "hi")
    open_vector_store(store, "notes").add(docs("a", "b"), embed(docs("a", "b")))
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema={schema}"
    monkeypatch.setenv("AGCORE_STORE_URL", url)
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"store: {postgres_url} (schema {schema}) (")
    checkpoints = len(store.list_checkpoints())
    assert "sessions: 1\n" in text and f"checkpoints: {checkpoints}\n" in text
    assert f"schema version: {store.schema_version}\n" in text
    assert "vectors: 2 (notes: 2)" in text and "graphs: 0" in text
    missing = "n_" + uuid.uuid4().hex[:10]
    assert main(["info", "--store", url.replace(schema, missing)]) == 1
    assert f"no agcore_lab store in schema {missing!r}" in capsys.readouterr().err
    with store.transaction(write=False) as conn:  # info created nothing
        row = conn.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?", (missing,)
        ).fetchone()
    assert row[0] == 0
    store.close()
