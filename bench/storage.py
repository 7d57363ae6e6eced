"""Benchmark: checkpoint listing, children of a session, and bytes stored per byte of content.

Each row is printed beside its floor, measured in the same run, and a PASS/MISS against the
goal of issue 16:

- **list_checkpoints of 10,000** (goal <= 30 ms): one session with real turns, then 10,000
  checkpoints of it (copies of a real one, written through the store's own insert). Timed:
  ``Checkpointer.list_checkpoints`` (best of ``--repeats``, the list freed inside the timing);
  the floor is the raw SQL under it (schema 11: the lean ``checkpoint_rows`` of the session by
  key, fetchall; the ``checkpoints`` view that computes the old text columns is slower than
  that). Shown per record too: the CPU time of fetching its row, of building its record and
  of freeing it.
  Shown too: the CPU time of both (steadier than wall time on a busy machine) beside the read
  of before issue 16 (a pydantic validation per row), one page (``limit=50``) from the middle
  (``before=``), ``to_dataframe`` beside ``pd.read_sql`` of the same rows, and (for
  information) a listing of 10,000 checkpoints that share no JSON text (each with its own
  slot heads, token counts and time, as real turns leave them; the copies of the timed row
  share theirs, which a read parses once).
- **children(id) among 1,000 sessions** (goal <= 0.5 ms): 1,000 stored sessions, 10 of them
  parents of 99 children each. Timed: ``SessionManager.children`` (best of ``--repeats``);
  the floor is a plain indexed query (``SELECT session_id FROM sessions WHERE parent_id = ?``).
- **storage / content** (goal <= 1.6): one session of 1,000 turns of a 75-character question
  and a 300-character reply (ScriptedModel, an automatic checkpoint per turn, model-call
  recording off: those records are measured by their own bench), on a SQLite file. Storage
  is the file's growth (after ``PRAGMA wal_checkpoint(TRUNCATE)``) from just after the session
  was created to the end; content is the UTF-8 bytes of the questions and replies. Where the
  bytes go is shown per table and index (``dbstat``), and the floor is measured beside it: the
  same messages in a minimal table (text id and content) and with a parent link (text id,
  parent id, content). The fixed cost of an empty file (every table's first page) is shown
  for information.

Run: python bench/storage.py [--checkpoints 10000] [--sessions 1000] [--turns 1000]
[--only listing] (one row; repeat --only for several)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from agcore_lab import Agent, Message, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.ids import new_id
from agcore_lab.llm.usage import ModelSpend, Usage
from agcore_lab.store._checkpoint_rows import COLUMNS, _validated
from agcore_lab.store._checkpoints import insert_checkpoint
from agcore_lab.store._sqlite_checkpoint_reads import _LEAN_SELECT
from agcore_lab.store.base import CkptMeta, SessionRecord

LIST_GOAL_S = 0.030
CHILDREN_GOAL_S = 0.0005
STORAGE_GOAL = 1.6
REPLY = "The quick brown fox jumps over the lazy dog while the agent takes careful notes. " * 5
QUESTION = "Question {:05d}: what does the quick brown fox do when the lazy dog sleeps? " * 2


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def _best(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def _best_cpu(action: Callable[[], object], repeats: int) -> float:
    """The least CPU time of this process over ``repeats`` runs (steady on a busy machine)."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        action()
        times.append(time.process_time() - start)
    return min(times)


def _freeing(make: Callable[[], list[Any]], repeats: int) -> float:
    """The least CPU time of freeing what ``make`` returns (the timed listings free theirs)."""
    times = []
    for _ in range(repeats):
        made = make()
        start = time.process_time()
        del made
        times.append(time.process_time() - start)
    return min(times)


def reply(messages: Sequence[Message]) -> str:
    """The scripted model's answer: 300 characters that depend on the conversation length."""
    return f"reply {len(messages):05d}: {REPLY}"[:300]


def question(turn: int) -> str:
    """The user's text of ``turn``: 75 characters."""
    return QUESTION.format(turn, turn)[:75]


# -- list_checkpoints ---------------------------------------------------------------------------


def listing(directory: Path, count: int, repeats: int) -> bool:
    """``list_checkpoints`` of ``count`` checkpoints beside the raw SQL under it."""
    store = SqliteStore(directory / "listing.db")
    manager = SessionManager(store, watch_interval=None)
    sid = manager.create_sync(Agent(name="bench", model=ScriptedModel(reply)))
    for turn in range(20):
        manager.submit_turn_sync(sid, question(turn))
    template = store.list_checkpoints(sid, limit=1)[0]
    with store.transaction() as conn:
        for n in range(count - len(store.list_checkpoints(sid))):
            insert_checkpoint(
                conn,
                template.model_copy(update={"ckpt_id": new_id("ckpt"), "turn_index": 21 + n}),
            )
    checkpointer = manager.checkpointer
    listed = checkpointer.list_checkpoints_sync(sid)
    assert len(listed) == count, (len(listed), count)
    distinct = _distinct_session(store, manager, template, count)
    conn = store.connection

    def raw() -> list[Any]:
        # Schema 11: the store's own query of the lean rows (``checkpoints`` is a view that
        # computes the old text columns, slower than what the store reads).
        return conn.execute(
            f"{_LEAN_SELECT} WHERE s.session_id = ? ORDER BY c.ckpt DESC", (sid,)
        ).fetchall()

    def validated() -> list[Any]:  # the read before issue 16: pydantic validation per row
        states = {d: json.loads(t) for d, t in conn.execute("SELECT * FROM slot_states")}
        rows = conn.execute(
            f"SELECT {', '.join(COLUMNS)} FROM checkpoints WHERE session_id = ? "
            "ORDER BY ckpt_id DESC",
            (sid,),
        ).fetchall()
        return [_validated(dict(zip(COLUMNS, row, strict=True)), states) for row in rows]

    floor = _best(raw, repeats)
    full = _best(lambda: checkpointer.list_checkpoints_sync(sid), repeats)
    cpu = _best_cpu(lambda: checkpointer.list_checkpoints_sync(sid), repeats)
    cpu_floor = _best_cpu(raw, repeats)
    cpu_before = _best_cpu(validated, max(2, repeats // 2))
    freeing = _freeing(lambda: checkpointer.list_checkpoints_sync(sid), repeats)
    middle = listed[count // 2].ckpt_id
    page = _best(lambda: checkpointer.list_checkpoints_sync(sid, limit=50, before=middle), repeats)
    varied = _best(lambda: checkpointer.list_checkpoints_sync(distinct), repeats)
    varied_cpu = _best_cpu(lambda: checkpointer.list_checkpoints_sync(distinct), repeats)
    frame = _best(lambda: checkpointer.to_dataframe(sid), repeats)
    import pandas as pd

    frame_floor = _best(
        lambda: pd.read_sql(
            "SELECT * FROM checkpoints WHERE session_id = ? ORDER BY ckpt_id DESC",
            conn,
            params=(sid,),
        ),
        repeats,
    )
    ok = full <= LIST_GOAL_S
    print(f"== list_checkpoints of {count:,} (best of {repeats})")
    print(
        f"  list_checkpoints: {full * 1e3:.1f} ms; raw SQL (floor) {floor * 1e3:.2f} ms, "
        f"{full / floor:.1f}x  goal <= {LIST_GOAL_S * 1e3:.0f} ms  {_verdict(ok)}"
    )
    print(
        f"    (the goal is {LIST_GOAL_S / floor:.2f}x the raw fetch alone: the rows' values made "
        "into Python objects, before any record is built)"
    )
    print(
        f"    (CPU time: {cpu * 1e3:.1f} ms; raw SQL {cpu_floor * 1e3:.1f} ms; the validated "
        f"read of before issue 16 {cpu_before * 1e3:.1f} ms, {cpu_before / cpu:.1f}x slower)"
    )
    per = 1e6 / count
    print(
        f"    (per record, CPU: fetching its row {cpu_floor * per:.2f} us, building its record "
        f"{(cpu - cpu_floor - freeing) * per:.2f} us, freeing it {freeing * per:.2f} us)"
    )
    print(
        f"    (every row with its own slots, spend and created_at text: {varied * 1e3:.1f} ms, "
        f"CPU {varied_cpu * 1e3:.1f} ms; information: the copies above share those texts)"
    )
    print(f"    (one page: limit=50, before= the middle one: {page * 1e3:.2f} ms)")
    print(
        f"    (to_dataframe: {frame * 1e3:.1f} ms; pd.read_sql of the rows {frame_floor * 1e3:.1f}"
        " ms)"
    )
    store.close()
    return ok


def _distinct_session(
    store: SqliteStore, manager: SessionManager, template: CkptMeta, count: int
) -> str:
    """A second session of ``count`` checkpoints, each as a real turn leaves it: its own head
    node, token counts and time (nothing for a read to parse once and reuse)."""
    sid = manager.create_sync(Agent(name="bench", model=ScriptedModel(reply)))
    start = template.created_at
    with store.transaction() as conn:
        for n in range(count - 1):
            # A head made as a turn makes it (new_id), and totals that are the spend's: the
            # one-slot, one-model row a turn writes.
            slots = {
                slot_id: slot.model_copy(update={"head_node_id": new_id("msg")})
                for slot_id, slot in template.slots.items()
            }
            spend = {
                model: ModelSpend(
                    usage=Usage(
                        prompt_tokens=spent.usage.prompt_tokens + 40 * n,
                        completion_tokens=spent.usage.completion_tokens + 70 * n,
                        requests=spent.usage.requests + n,
                    ),
                    cost=spent.cost + n * 1e-5,
                )
                for model, spent in template.spend.items()
            }
            insert_checkpoint(
                conn,
                template.model_copy(
                    update={
                        "ckpt_id": new_id("ckpt"),
                        "session_id": sid,
                        "turn_index": 21 + n,
                        "created_at": start + timedelta(microseconds=137 * n),
                        "prompt_tokens": sum(s.usage.prompt_tokens for s in spend.values()),
                        "completion_tokens": sum(s.usage.completion_tokens for s in spend.values()),
                        "cost_usd": sum(s.cost for s in spend.values()),
                        "slots": slots,
                        "spend": spend,
                    }
                ),
            )
    assert len(store.list_checkpoints(sid)) == count
    return sid


# -- children -----------------------------------------------------------------------------------


def children(directory: Path, count: int, repeats: int) -> bool:
    """``SessionManager.children`` among ``count`` sessions beside a plain indexed query."""
    store = SqliteStore(directory / "children.db")
    parents = [f"ses_parent{p:03d}" for p in range(10)]
    for parent in parents:
        store.create_session(SessionRecord(session_id=parent, agent_name="bench"))
    for n in range(count - len(parents)):
        store.create_session(
            SessionRecord(session_id=new_id("ses"), agent_name="bench", parent_id=parents[n % 10])
        )
    manager = SessionManager(store, watch_interval=None)
    target = parents[3]
    found = manager.children_sync(target)
    expected = (count - len(parents)) // 10 + (1 if 3 < (count - len(parents)) % 10 else 0)
    assert len(found) == expected, (len(found), expected)
    conn = store.connection

    def raw() -> list[Any]:
        return conn.execute(
            "SELECT session_id FROM sessions WHERE parent_id = ?", (target,)
        ).fetchall()

    floor = _best(raw, repeats)
    timed = _best(lambda: asyncio.run(_children(manager, target)), repeats)
    loop_cost = _best(lambda: asyncio.run(_nothing()), repeats)
    timed = max(timed - loop_cost, 0.0)  # asyncio.run's own cost is not the engine's
    ok = timed <= CHILDREN_GOAL_S
    print(f"== children(id) among {count:,} sessions (best of {repeats})")
    print(
        f"  children: {timed * 1e3:.3f} ms ({len(found)} children); indexed query (floor) "
        f"{floor * 1e3:.3f} ms  goal <= {CHILDREN_GOAL_S * 1e3:.1f} ms  {_verdict(ok)}"
    )
    store.close()
    return ok


async def _children(manager: SessionManager, target: str) -> list[str]:
    return await manager.children(target)


async def _nothing() -> None:
    return None


# -- storage ------------------------------------------------------------------------------------


def _size(conn: sqlite3.Connection, path: Path) -> int:
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(path)


def _tables(conn: sqlite3.Connection) -> dict[str, int]:
    rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name")
    return {name: int(size) for name, size in rows}


def _floor(directory: Path, rows: list[tuple[str, str | None, str]], parent: bool) -> int:
    """Bytes of the same messages in a minimal table (with or without a parent link)."""
    path = directory / f"floor-{parent}.db"
    conn = sqlite3.connect(path, isolation_level=None)
    if parent:
        conn.execute(
            "CREATE TABLE m (id TEXT PRIMARY KEY, parent TEXT, content TEXT) WITHOUT ROWID"
        )
    else:
        conn.execute("CREATE TABLE m (id TEXT PRIMARY KEY, content TEXT) WITHOUT ROWID")
    before = os.path.getsize(path)
    conn.execute("BEGIN")
    if parent:
        conn.executemany("INSERT INTO m (id, parent, content) VALUES (?, ?, ?)", rows)
    else:
        conn.executemany("INSERT INTO m (id, content) VALUES (?, ?)", [(i, c) for i, _, c in rows])
    conn.execute("COMMIT")
    size = os.path.getsize(path) - before
    conn.close()
    return size


async def _session(path: Path, turns: int) -> tuple[SqliteStore, str, int, int, int]:
    store = SqliteStore(path)
    manager = SessionManager(store, watch_interval=None)
    agent = Agent(name="bench", model=ScriptedModel(reply), record_calls=False)
    sid = await manager.create(agent)
    empty = _size(store.connection, path)
    content = 0
    for turn in range(turns):
        text = question(turn)
        done = await manager.submit_turn(sid, text)
        content += len(text.encode()) + len(done.reply.encode())
    return store, sid, empty, content, _size(store.connection, path)


def storage(directory: Path, turns: int) -> bool:
    """Growth of the file per byte of content, by table, beside the floor."""
    path = directory / "storage.db"
    store, sid, empty, content, size = asyncio.run(_session(path, turns))
    conn = store.connection
    tables = _tables(conn)
    messages = [
        (message.id, link.parent_node_id, getattr(message, "content", None) or "")
        for slot in store.load_slots(sid)
        if slot.head_node_id
        for link, message in store.load_chain(slot.head_node_id)
    ]
    store.close()
    ratio = (size - empty) / content
    floor = _floor(directory, messages, parent=False) / content
    floor_links = _floor(directory, messages, parent=True) / content
    ok = ratio <= STORAGE_GOAL
    print(f"== storage / content, {turns:,} turns of 75 + 300 characters")
    print(
        f"  storage: {(size - empty) / turns:.0f} B/turn for {content / turns:.0f} B of content, "
        f"ratio {ratio:.2f}; floor {floor:.2f} (id + content), {floor_links:.2f} (with parent "
        f"links)  goal <= {STORAGE_GOAL}  {_verdict(ok)}"
    )
    where = ", ".join(
        f"{name} {size / turns:.0f}"
        for name, size in sorted(tables.items(), key=lambda item: -item[1])
        if size > 4096
    )
    print(f"    (B/turn by table and index: {where})")
    pages = sum(1 for size in tables.values() if size <= 4096)
    print(
        f"    (an empty file: {empty / 1024:.0f} KiB; {pages} tables and indexes of one page each;"
        " information)"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--turns", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--only",
        action="append",
        choices=("listing", "children", "storage"),
        help="run only this row (repeat for several; default: every row)",
    )
    args = parser.parse_args()
    if args.checkpoints < 100 or args.sessions < 100 or args.turns < 10:
        parser.error("at least 100 checkpoints, 100 sessions and 10 turns")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        rows: dict[str, Callable[[], bool]] = {
            "listing": lambda: listing(directory, args.checkpoints, args.repeats),
            "children": lambda: children(directory, args.sessions, args.repeats * 10),
            "storage": lambda: storage(directory, args.turns),
        }
        results = [run() for name, run in rows.items() if not args.only or name in args.only]
    passed = sum(results)
    print(
        f"{passed} of {len(results)} targets PASS: {_verdict(passed == len(results))} "
        f"({time.perf_counter() - started:.1f} s)"
    )


if __name__ == "__main__":
    main()
