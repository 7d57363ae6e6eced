"""``SqliteStore`` on a real file: WAL, migrations, threads and processes sharing one file."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agcore_lab.errors import StorageError
from agcore_lab.llm.messages import UserMessage
from agcore_lab.store.base import LinkRecord, SessionRecord
from agcore_lab.store.migrations import MIGRATIONS
from agcore_lab.store.sqlite import SqliteStore

HERE = Path(__file__).parent
WORKERS = 4
WRITES = 50


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Any:
    # Spawned children inherit sys.path, so they can import the worker module by name.
    monkeypatch.syspath_prepend(str(HERE))
    import _store_workers

    return _store_workers


def _run_processes(target: Callable[..., None], args: list[tuple[Any, ...]]) -> list[Any]:
    """Start one spawned process per args tuple at the same moment; return what each reported."""
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    processes = [ctx.Process(target=target, args=(*a, start, out)) for a in args]
    for process in processes:
        process.start()
    start.set()
    reports = [out.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return reports


def test_file_store_uses_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "lab.db", timeout=2.5)
    assert store.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.connection.execute("PRAGMA busy_timeout").fetchone()[0] == 2500
    store.close()
    # WAL is a property of the file: a plain sqlite3 connection sees it too.
    with sqlite3.connect(tmp_path / "lab.db") as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_missing_parent_directories_are_created(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "lab.db"
    SqliteStore(path).close()
    assert path.exists()


def test_migrations_are_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    first = SqliteStore(path)
    first.create_session(SessionRecord(session_id="s", agent_name="a"))
    second = SqliteStore(path)  # opened while the first is still open
    assert first.schema_version == second.schema_version == len(MIGRATIONS)
    assert second.connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert [r.session_id for r in second.list_sessions()] == ["s"]
    first.close()
    second.close()
    third = SqliteStore(path)
    assert third.get_session("s") is not None
    assert third.connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    third.close()


def test_a_newer_schema_is_refused_with_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    SqliteStore(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(StorageError, match="upgrade agcore_lab"):
        SqliteStore(path)


def test_several_threads_share_one_store(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "lab.db")
    store.create_session(SessionRecord(session_id="shared", agent_name="a"))
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            own = f"t{worker}"
            store.create_session(SessionRecord(session_id=own, agent_name="a"))
            head = None
            for n in range(WRITES):
                store.memory_set("shared", f"{own}-{n}", n, {})
                message = UserMessage(content=f"{own}:{n}")
                link = LinkRecord(
                    node_id=f"{own}-{n}", parent_node_id=head, message_id=message.id, depth=n
                )
                store.commit(
                    SessionRecord(session_id=own, agent_name="a", turn_index=n + 1, version=n),
                    messages=[message],
                    links=[link],
                )
                head = link.node_id
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store.memory_entries("shared")) == WORKERS * WRITES
    assert store.memory_version("shared") == WORKERS * WRITES
    for worker in range(WORKERS):
        chain = store.load_chain(f"t{worker}-{WRITES - 1}")
        assert [m.text for _, m in chain] == [f"t{worker}:{n}" for n in range(WRITES)]


def test_several_threads_with_their_own_stores_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    SqliteStore(path).close()
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            store = SqliteStore(path)
            for n in range(WRITES):
                store.memory_set("shared", f"{worker}-{n}", [worker, n], {})
            store.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    store = SqliteStore(path)
    versions = sorted(e.version for e in store.memory_entries("shared"))
    assert versions == list(range(1, WORKERS * WRITES + 1))  # no version given out twice


def test_several_processes_write_to_one_file(tmp_path: Path, workers: Any) -> None:
    path = str(tmp_path / "lab.db")
    setup = SqliteStore(path)
    setup.create_session(SessionRecord(session_id=workers.SHARED, agent_name="a"))
    setup.close()

    reports = _run_processes(
        workers.write_memory_and_commits, [(path, i, WRITES) for i in range(WORKERS)]
    )
    assert sorted(reports) == [(i, "ok") for i in range(WORKERS)]  # no "database is locked"

    # A store opened after the processes exited sees every write.
    store = SqliteStore(path)
    entries = {e.key: e.value for e in store.memory_entries(workers.SHARED)}
    assert len(entries) == WORKERS * WRITES
    assert entries["w3-49"] == {"worker": 3, "n": 49}
    assert store.memory_version(workers.SHARED) == WORKERS * WRITES
    for worker in range(WORKERS):
        record = store.get_session(f"worker-{worker}")
        assert record is not None and record.turn_index == WRITES
        chain = store.load_chain(f"worker-{worker}-{WRITES - 1}")
        assert [m.text for _, m in chain] == [f"{worker}:{n}" for n in range(WRITES)]
    store.close()


def test_several_processes_open_a_new_file_at_once(tmp_path: Path, workers: Any) -> None:
    path = str(tmp_path / "fresh.db")
    reports = _run_processes(workers.open_store, [(path,) for _ in range(WORKERS)])
    assert reports == [len(MIGRATIONS)] * WORKERS
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_sessions_read_as_a_flat_dataframe(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "lab.db")
    store.create_session(SessionRecord(session_id="s1", agent_name="calc", turn_index=2))
    store.create_session(SessionRecord(session_id="s2", agent_name="calc", parent_id="s1"))
    frame = store.read_dataframe("select * from sessions order by session_id")
    assert frame.shape[0] == 2
    for column in (
        "session_id",
        "agent_name",
        "parent_id",
        "turn_index",
        "current_slot_id",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "created_at",
    ):
        assert column in frame.columns
    assert list(frame["turn_index"]) == [2, 0]
    assert frame.loc[1, "parent_id"] == "s1"
    # Flat: every cell is a scalar, never a nested dict or list.
    for value in frame.to_numpy().ravel():
        assert not isinstance(value, dict | list)
    assert store.read_dataframe("select * from sessions where turn_index > ?", [1]).shape[0] == 1
