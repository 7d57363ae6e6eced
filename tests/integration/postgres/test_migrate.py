"""``agcore-lab migrate SRC DST`` against a real PostgreSQL server, both directions: every
table, vector namespace and graph arrives with verified counts, a migrated lab resumes its
pending call and rolls back, a non-empty destination is refused unless --force, progress is
shown on long copies, and bad input is one line that changes nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from agcore_lab import (
    Agent,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    Tool,
    ToolCall,
    UserMessage,
    open_store,
)
from agcore_lab.cli import main
from agcore_lab.kg import GraphEntity, GraphRelation, open_graph
from agcore_lab.llm.messages import Message
from agcore_lab.llm.scripted import Reply
from agcore_lab.rag import open_vector_store
from agcore_lab.store.base import Store
from agcore_lab.store.open import split_postgres_url
from agcore_lab.store.pg_info import schema_exists
from agcore_lab.testing.vector_conformance import EMBED, docs, embed

pytestmark = pytest.mark.timeout(300)


def _pg(url: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema=m_{uuid.uuid4().hex[:10]}"


class Lab:
    """A bank agent whose ``transfer`` needs a person's yes; runs of the tool are counted."""

    def __init__(self) -> None:
        self.runs: list[int] = []

        def transfer(amount: int) -> str:
            """Move money."""
            self.runs.append(amount)
            return f"sent {amount}"

        def answer(messages: Sequence[Message]) -> Reply:
            last = messages[-1]
            if isinstance(last, UserMessage):
                if "send" in (last.content or ""):
                    return ToolCall(name="transfer", arguments={"amount": 100})
                return f"noted: {last.content}"
            return "done"

        self.agent = Agent(
            name="bank",
            model=ScriptedModel(answer),
            tools=[Tool.from_function(transfer, requires_approval=True)],
        )

    def manager(self, store: Store) -> SessionManager:
        return SessionManager(store, agents=[self.agent], watch_interval=None)

    def build(self, store: Store) -> str:
        manager = self.manager(store)
        sid = manager.create_sync(self.agent)
        manager.submit_turn_sync(sid, "hello")
        manager.submit_turn_sync(sid, "remember the rent")
        session = manager.get_sync(sid)
        session.session_memory.set("currency", "EUR")
        ckpts = manager.checkpointer.list_checkpoints_sync(sid)
        child = manager.checkpointer.fork_sync(sid, ckpts[-1].ckpt_id)
        manager.submit_turn_sync(child, "a child turn")
        result = manager.submit_turn_sync(sid, "send 100")
        assert result.status == "interrupted"
        batch = docs(*[f"d{i}" for i in range(7)], source_id="notes.md")
        open_vector_store(store, "notes").add(batch, embed(batch))
        open_vector_store(store, "other").add(docs("x"), np.ones((1, 4)))
        graph = open_graph(store, "kg")
        graph.add_entity_sync(GraphEntity(id="ada", tags=["math"], properties={"born": 1815}))
        graph.add_entity_sync(GraphEntity(id="engine"))
        graph.add_relation_sync(GraphRelation(source="ada", target="engine", weight=0.9))
        return sid


def _counts(store: Store) -> dict[str, int]:
    read = store.read_dataframe  # type: ignore[attr-defined]
    tables = (
        "sessions",
        "messages",
        "message_links",
        "slots",
        "memory_log",
        "checkpoints",
        "slot_states",
        "pending_calls",
        "model_calls",
        "call_blobs",
        "vectors",
        "kg_entities",
        "kg_entity_tags",
        "kg_relations",
    )
    return {t: int(read(f"select count(*) as n from {t}")["n"][0]) for t in tables}


def _migrate(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["migrate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_sqlite_to_postgres_and_back_copies_everything_and_the_lab_works(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = Lab()
    source = SqliteStore(tmp_path / "lab.db")
    sid = lab.build(source)
    before = _counts(source)
    # Every kind of state is there to copy (links appear only when chains share messages).
    assert all(n for t, n in before.items() if t != "message_links"), before
    search = [
        h.document.id
        for h in open_vector_store(source, "notes").search(EMBED.embed(["content of d3"])[0], k=3)
    ]
    source.close()

    target = _pg(postgres_url)
    code, out, err = _migrate(f"sqlite:///{tmp_path / 'lab.db'}", target, capsys=capsys)
    assert code == 0, err
    assert "verified: every count matches" in out
    assert f"  sessions: {before['sessions']}" in out
    assert f"  messages: {before['messages']}" in out
    assert "vectors 'notes': 7 documents" in out and "graph 'kg': 2 entities, 1 relations" in out

    pg = open_store(target)
    assert _counts(pg) == before
    vectors = open_vector_store(pg, "notes")
    assert type(vectors).__name__ == "PostgresVectorStore"
    assert [h.document.id for h in vectors.search(EMBED.embed(["content of d3"])[0], k=3)] == search
    assert vectors.get(["d2"])[0].metadata == {"source_id": "notes.md"}
    assert open_vector_store(pg, "other").dim == 4
    graph = open_graph(pg, "kg")
    assert [r.entity.id for r in graph.get_related_sync("ada")] == ["engine"]
    assert graph.get_entity_sync("ada").properties == {"born": 1815}  # type: ignore[union-attr]

    # The migrated lab resumes its pending call (the tool runs once) and rolls back.
    manager = lab.manager(pg)
    (call,) = manager.pending_calls(sid)
    done = manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert done.reply == "done" and lab.runs == [100]
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)
    first = ckpts[-1]
    manager.checkpointer.rollback_sync(sid, first.ckpt_id)
    assert pg.get_session(sid).turn_index == first.turn_index  # type: ignore[union-attr]
    after = _counts(pg)
    pg.close()

    # And back to a new SQLite file: the resumed and rolled-back state travels too.
    back = tmp_path / "back.db"
    code, out, err = _migrate(target, str(back), capsys=capsys)
    assert code == 0, err
    copy = SqliteStore(back)
    assert _counts(copy) == after
    assert copy.get_session(sid).turn_index == first.turn_index  # type: ignore[union-attr]
    assert copy.list_pending(sid) == []  # decided on PostgreSQL, and that travelled back
    assert len(copy.list_pending(sid, include_resolved=True)) == 1
    again = lab.manager(copy)
    again.submit_turn_sync(sid, "hello again")
    assert copy.get_session(sid).turn_index == first.turn_index + 1  # type: ignore[union-attr]
    copy.close()


def test_a_non_empty_destination_is_refused_unless_forced(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = Lab()
    source = SqliteStore(tmp_path / "lab.db")
    lab.build(source)
    before = _counts(source)
    source.close()
    target = _pg(postgres_url)
    assert _migrate(str(tmp_path / "lab.db"), target, capsys=capsys)[0] == 0
    pg = open_store(target)
    SessionManager(pg, watch_interval=None).create_sync(Agent(name="extra", model=ScriptedModel()))
    held = _counts(pg)
    code, out, err = _migrate(str(tmp_path / "lab.db"), target, capsys=capsys)
    assert code == 1 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("agcore-lab: error:") and "not empty" in line and "--force" in line
    assert _counts(pg) == held  # nothing written
    code, out, err = _migrate(
        str(tmp_path / "lab.db"), target, "--force", "--batch", "2", capsys=capsys
    )
    assert code == 0, err
    assert _counts(pg) == before  # replaced, not added to
    assert "agcore-lab: copying messages: 2/" in err  # progress on a long copy
    assert "agcore-lab: copying vectors 'notes': 7/7" in err
    assert "agcore-lab: copying graph 'kg': 3/3" in err
    pg.close()


def test_bad_input_is_one_line_and_changes_nothing(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _migrate(str(tmp_path / "missing.db"), _pg(postgres_url), capsys=capsys)
    assert code == 1 and "no source database" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "missing.db").exists()
    SqliteStore(tmp_path / "a.db").close()
    code, _, err = _migrate(str(tmp_path / "a.db"), f"sqlite:///{tmp_path / 'a.db'}", capsys=capsys)
    assert code == 1 and "one store" in err
    code, _, err = _migrate(str(tmp_path / "a.db"), "mysql://db/lab", capsys=capsys)
    assert code == 1 and "mysql://" in err
    code, _, err = _migrate(
        str(tmp_path / "a.db"), str(tmp_path / "b.db"), "--batch", "0", capsys=capsys
    )
    assert code == 1 and "batch" in err


def test_the_command_runs_as_a_process(postgres_url: str, tmp_path: Path) -> None:
    lab = Lab()
    source = SqliteStore(tmp_path / "lab.db")
    lab.build(source)
    source.close()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agcore_lab",
            "migrate",
            f"sqlite:///{tmp_path / 'lab.db'}",
            _pg(postgres_url),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "verified" in done.stdout and "Traceback" not in done.stderr


def test_a_database_from_an_old_release_moves_to_postgres(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "release.db"
    shutil.copy(Path(__file__).resolve().parents[2] / "data" / "release_1fa7d84.db", old)
    target = _pg(postgres_url)
    code, out, err = _migrate(str(old), target, capsys=capsys)
    assert code == 0, err
    source, pg = SqliteStore(old), open_store(target)
    assert _counts(pg) == _counts(source)  # the old file was brought up to date, then copied
    assert [s.session_id for s in pg.list_sessions()] == [
        s.session_id for s in source.list_sessions()
    ]
    assert [c.interrupt_id for c in pg.list_pending(include_resolved=True)] == [
        c.interrupt_id for c in source.list_pending(include_resolved=True)
    ]
    source.close()
    pg.close()


def test_a_postgres_source_that_does_not_exist_is_not_created(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _pg(postgres_url)
    code, _, err = _migrate(source, str(tmp_path / "copy.db"), capsys=capsys)
    assert code == 1 and "no source store in schema 'm_" in err
    assert not (tmp_path / "copy.db").exists()
    schema = source.rsplit("schema=", 1)[1]

    assert split_postgres_url(source) == (postgres_url, schema)
    assert not schema_exists(postgres_url, schema)
