"""Benchmark: time travel at any history length — rollback, fork, the first turn after a
rollback, and recover/load (issue 16: "a checkpoint costs O(what changed), not O(history)").

One session of ``--turns`` turns (10,000 by default) and one of ``--fork-turns`` (5,000) on
ScriptedModel, each turn a 75-character question and a 300-character reply, an automatic
checkpoint after every turn, on a SQLite file in a temporary directory. Every figure is printed
beside its floor or peer measured in the same run, with PASS/MISS against the goal:

- rollback of the live session to its head (the latest checkpoint), to the middle and to the
  oldest checkpoint (best of ``--repeats``; between two timed rollbacks the session is rolled
  back to its head again, untimed). Goal: <= 10 ms to any checkpoint. Peer: LangGraph's
  ``get_state`` on a 1,000-turn SqliteSaver thread, when ``langgraph`` and
  ``langgraph-checkpoint-sqlite`` are installed (skipped with a message otherwise).
- fork from the middle checkpoint of the ``--fork-turns`` session: time (best of
  ``--repeats``) and the bytes it stores (the database file's growth over 100 forks divided by
  100, after a WAL checkpoint; and the payload of the rows the first fork wrote). Goal: <= 5 ms
  and < 1 KB.
- the first turn after a rollback to the middle (the turn and its automatic checkpoint),
  against a normal turn at the head of the same session (median of 20). Goal: <= 2x.
- recover (``SessionManager.recover`` in a fresh manager on a fresh store) and
  ``AgentSession.load`` of the whole session, against the floor: the raw ``sqlite3`` fetchall
  of the same chain (the store's own chain query, no objects built). Goal: <= 3x the floor.
  RAM with ``tracemalloc``: peak and retained (what the loaded session keeps) beside the
  content size (UTF-8 bytes of the messages' text) and the raw fetchall's. Goal: retained
  <= 2x the content (a loaded history is a compact ``MessageHistory``).
- a turn on the recovered session (its history compact, messages built when read) against a
  turn on the same session with its history as message objects, as a session that made its
  turns live holds it (two managers over two copies of the file, alternating rounds of 5
  turns, the median of the rounds' ratios). Goal: <= 1.1x (a compact history costs a turn
  nothing more).

Run: python bench/timetravel.py [--turns 10000] [--fork-turns 5000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from agcore_lab import Agent, AgentSession, Message, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.llm.history import MessageHistory
from agcore_lab.store import _chains, _sqlite_chains

QUESTION = "Question {i}: what does the agent remember about item {i} of the long list?"
FILLER = "The quick brown fox jumps over the lazy dog while the agent takes careful notes. "
FORKS = 100

# CPU time of this process: every measured path runs on this thread (SQLite included, no
# fsync in WAL mode with synchronous=NORMAL), and on a shared 2-core machine wall time mostly
# measures the neighbours. ``--wall`` switches to wall time.
clock = time.process_time


def question(i: int) -> str:
    """A deterministic question of exactly 75 characters."""
    return (QUESTION.format(i=i) + " " * 75)[:75]


def reply(messages: Sequence[Message]) -> str:
    """The scripted reply: 300 characters that depend on the conversation length."""
    return (f"reply to message {len(messages)}: " + FILLER * 4)[:300]


def agent() -> Agent:
    """The benchmark's agent (the same name in every manager, so recover finds it)."""
    return Agent(name="bench", model=ScriptedModel(reply))


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


async def _best(
    repeats: int, before: Callable[[], Awaitable[Any]], timed: Callable[[], Any]
) -> float:
    times = []
    for _ in range(repeats):
        await before()
        start = clock()
        await timed()
        times.append(clock() - start)
    return min(times)


async def build(db: Path, turns: int) -> tuple[SessionManager, str]:
    """A manager over ``db`` holding one live session of ``turns`` turns."""
    manager = SessionManager(SqliteStore(db), watch_interval=None)
    sid = await manager.create(agent())
    for i in range(turns):
        await manager.submit_turn(sid, question(i))
    return manager, sid


async def rollbacks(manager: SessionManager, sid: str, repeats: int) -> dict[str, float]:
    checkpointer = manager.checkpointer
    ckpts = await checkpointer.list_checkpoints(sid)  # newest first
    head, middle, oldest = ckpts[0], ckpts[len(ckpts) // 2], ckpts[-1]
    session = await manager.get(sid)

    async def to_head() -> None:
        await checkpointer.rollback(sid, head.ckpt_id)

    figures = {}
    for name, target in (("head", head), ("middle", middle), ("oldest", oldest)):
        figures[name] = await _best(
            repeats, to_head, lambda target=target: checkpointer.rollback(sid, target.ckpt_id)
        )
        assert session.turn_index == target.turn_index
    await to_head()
    assert len(session.messages) == head.message_count
    return figures


async def first_turn(manager: SessionManager, sid: str, repeats: int) -> tuple[float, float]:
    """(a normal turn at the head, the first turn after a rollback to the middle)."""
    checkpointer = manager.checkpointer
    normal = []
    for i in range(20):
        start = clock()
        await manager.submit_turn(sid, question(i))
        normal.append(clock() - start)
    ckpts = await checkpointer.list_checkpoints(sid)
    middle = ckpts[len(ckpts) // 2]
    after = []
    for i in range(repeats):
        await checkpointer.rollback(sid, middle.ckpt_id)
        start = clock()
        await manager.submit_turn(sid, question(i))
        after.append(clock() - start)
    await checkpointer.rollback(sid, ckpts[0].ckpt_id)  # the whole history again, for loads()
    return statistics.median(normal), min(after)


async def loaded_turns(db: Path, sid: str, rounds: int = 15) -> tuple[float, float, float]:
    """(median turn on a recovered session whose history is compact, the same with the
    history as message objects — as a session that made its turns live holds it, the median
    of their per-round ratios).

    Each runs in its own manager over its own copy of ``db`` (the same state); they take
    turns in alternating rounds of 5, after 5 untimed turns each (the first turn after a
    load folds the history once), so both are measured in the same conditions; the ratio of
    each round's medians compares turns made moments apart."""
    managers = []
    for name in ("compact", "objects"):
        copy = db.with_name(f"{name}.db")
        shutil.copyfile(db, copy)
        if db.with_name(db.name + "-wal").exists():  # (closed stores leave none)
            shutil.copyfile(db.with_name(db.name + "-wal"), copy.with_name(copy.name + "-wal"))
        manager = SessionManager(SqliteStore(copy), agents=[agent()], watch_interval=None)
        session = await manager.recover(sid)
        if name == "objects":
            for slot in session.slots.values():
                slot.messages = MessageHistory(list(slot.messages))
        managers.append(manager)
    times: list[list[float]] = [[], []]
    ratios = []
    for rnd in range(rounds + 1):
        medians = []
        for which, manager in enumerate(managers):
            these = []
            for i in range(5):
                start = clock()
                await manager.submit_turn(sid, question(i))
                these.append(clock() - start)
            medians.append(statistics.median(these))
            if rnd:  # round 0 warms both up
                times[which].extend(these)
        if rnd:
            ratios.append(medians[0] / medians[1])
    for manager in managers:
        assert isinstance(manager.store, SqliteStore)
        manager.store.close()
    return statistics.median(times[0]), statistics.median(times[1]), statistics.median(ratios)


def _content_bytes(session: AgentSession) -> int:
    seen: dict[str, Message] = {}
    for slot in session.slots.values():
        for message in slot.messages:
            seen.setdefault(message.id, message)
    return sum(len(m.text.encode()) for m in seen.values())


def _raw_fetch(db: Path, head: str) -> list[Any]:
    # The store's own chain query, by plain sqlite3: schema 11 walks chain_nodes by rowid
    # from the head's key (before it: the text-keyed walk over messages).
    conn = sqlite3.connect(db)
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] >= 11:
            key = _sqlite_chains.stored_keys(conn, [head])[head]
            tail, link = conn.execute(
                "SELECT tail, role IS NULL FROM chain_nodes WHERE node = ?", (key,)
            ).fetchone()
            return conn.execute(_sqlite_chains._NODES_SQL, (key, 1 << 62, tail, link)).fetchall()
        return conn.execute(_chains._CHAIN_SQL, (head,)).fetchall()
    finally:
        conn.close()


def _measured(function: Callable[[], Any]) -> tuple[Any, float, int, int]:
    """(result, seconds, peak bytes, retained bytes) of one call, under tracemalloc."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    start = clock()
    result = function()
    seconds = clock() - start
    gc.collect()
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, seconds, peak - base, retained - base


async def loads(db: Path, sid: str, repeats: int) -> dict[str, Any]:
    store = SqliteStore(db)
    head = next(s.head_node_id for s in store.load_slots(sid) if s.head_node_id)
    assert head is not None
    figures: dict[str, Any] = {}
    times = []
    for _ in range(repeats):
        start = clock()
        rows = _raw_fetch(db, head)
        times.append(clock() - start)
    figures["raw_s"] = min(times)
    times = []
    for _ in range(repeats):
        conn = sqlite3.connect(db)
        start = clock()
        conn.execute(  # schema 11: the base rows (``messages`` is a view computing ids)
            "SELECT * FROM chain_nodes WHERE session = "
            "(SELECT key FROM session_keys WHERE session_id = ?)",
            (sid,),
        ).fetchall()
        times.append(clock() - start)
        conn.close()
    figures["table_s"] = min(times)
    figures["rows"] = len(rows)
    del rows
    _, _, figures["raw_peak"], figures["raw_kept"] = _measured(lambda: _raw_fetch(db, head))

    times = []
    for _ in range(repeats):
        fresh = SqliteStore(db)
        start = clock()
        AgentSession.load(sid, agent(), store=fresh)
        times.append(clock() - start)
        fresh.close()
    figures["load_s"] = min(times)

    async def recover_once() -> float:
        manager = SessionManager(SqliteStore(db), agents=[agent()], watch_interval=None)
        start = clock()
        await manager.recover(sid)
        seconds = clock() - start
        manager.store.close()
        return seconds

    figures["recover_s"] = min([await recover_once() for _ in range(repeats)])

    fresh = SqliteStore(db)
    session, _, figures["peak"], figures["kept"] = _measured(
        lambda: AgentSession.load(sid, agent(), store=fresh)
    )
    figures["content"] = _content_bytes(session)
    figures["messages"] = len(session.messages)
    fresh.close()
    store.close()
    return figures


async def forks(db: Path, turns: int, repeats: int) -> dict[str, float]:
    manager, sid = await build(db, turns)
    store = manager.store
    assert isinstance(store, SqliteStore)
    checkpointer = manager.checkpointer
    ckpts = await checkpointer.list_checkpoints(sid)
    middle = ckpts[len(ckpts) // 2]

    async def nothing() -> None:
        return None

    seconds = await _best(repeats, nothing, lambda: checkpointer.fork(sid, middle.ckpt_id))
    conn = store.connection
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = os.path.getsize(store.path)
    payload = int(conn.execute("SELECT sum(payload) FROM dbstat").fetchone()[0])
    child = await checkpointer.fork(sid, middle.ckpt_id)
    first_payload = int(conn.execute("SELECT sum(payload) FROM dbstat").fetchone()[0]) - payload
    for _ in range(FORKS - 1):
        await checkpointer.fork(sid, middle.ckpt_id)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    grown = (os.path.getsize(store.path) - size) / FORKS
    forked = await manager.get(child)
    assert len(forked.messages) == middle.message_count
    store.close()
    return {"fork_s": seconds, "fork_bytes": grown, "fork_payload": first_payload}


def langgraph_get_state(turns: int, db: Path) -> float | None:
    """LangGraph's ``get_state`` on a thread of ``turns`` turns (SqliteSaver), or ``None``."""
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, MessagesState, StateGraph
    except ImportError:
        return None
    from langchain_core.messages import AIMessage, HumanMessage

    def answer(state: MessagesState) -> dict[str, list[AIMessage]]:
        return {"messages": [AIMessage(content=reply(state["messages"]))]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "bench"}}
        for i in range(turns):
            graph.invoke({"messages": [HumanMessage(content=question(i))]}, config)
        times = []
        for _ in range(5):
            start = clock()
            graph.get_state(config)
            times.append(clock() - start)
    return min(times)


async def main_async(turns: int, fork_turns: int, repeats: int, tmp: Path) -> bool:
    print(f"building a {turns}-turn session ...", flush=True)
    started = clock()
    manager, sid = await build(tmp / "session.db", turns)
    print(f"  built in {clock() - started:.1f} s")
    checks = []

    roll = await rollbacks(manager, sid, repeats)
    peer = langgraph_get_state(1000, tmp / "langgraph.db")
    peer_text = (
        f"LangGraph get_state at 1,000 turns {_ms(peer)}"
        if peer is not None
        else "LangGraph not installed: peer skipped (pip install -e '.[bench-peers]')"
    )
    worst = max(roll.values())
    checks.append(worst <= 0.010)
    print(f"== rollback, {turns} turns (best of {repeats}; peer: {peer_text})")
    for name, seconds in roll.items():
        print(f"  to the {name:<6}: {_ms(seconds)}")
    print(f"  worst {_ms(worst)}  goal <= 10 ms to any checkpoint  {_verdict(checks[-1])}")

    normal, after = await first_turn(manager, sid, repeats)
    ratio = after / normal
    checks.append(ratio <= 2.0)
    print(f"== first turn after a rollback to the middle, {turns} turns")
    print(
        f"  {_ms(after)} vs a normal turn {_ms(normal)} (turn + checkpoint): ratio {ratio:.2f}"
        f"  goal <= 2x  {_verdict(checks[-1])}"
    )
    assert isinstance(manager.store, SqliteStore)
    manager.store.close()

    figures = await loads(tmp / "session.db", sid, repeats)
    raw = figures["raw_s"]
    content = figures["content"]
    checks.append(figures["recover_s"] <= 3 * raw and figures["load_s"] <= 3 * raw)
    checks.append(figures["kept"] <= 2 * content)
    print(f"== recover / load, {turns} turns ({figures['messages']} messages)")
    print(f"  floor: raw sqlite fetchall of the chain ({figures['rows']} rows) {_ms(raw)}")
    print(
        f"  (for information: the plain fetchall of the session's message rows, no chain walk,"
        f" {_ms(figures['table_s'])})"
    )
    print(f"  AgentSession.load {_ms(figures['load_s'])} ({figures['load_s'] / raw:.1f}x)")
    print(
        f"  manager.recover   {_ms(figures['recover_s'])} ({figures['recover_s'] / raw:.1f}x)"
        f"  goal <= 3x the floor  {_verdict(checks[-2])}"
    )
    mb = 1e6
    print(
        f"  RAM (tracemalloc): content {content / mb:.1f} MB; load peak "
        f"{figures['peak'] / mb:.1f} MB, retained {figures['kept'] / mb:.1f} MB "
        f"({figures['kept'] / content:.1f}x content); raw fetchall peak "
        f"{figures['raw_peak'] / mb:.1f} MB, retained {figures['raw_kept'] / mb:.1f} MB"
        f"  goal retained <= 2x content  {_verdict(checks[-1])}"
    )

    compact, objects, ratio = await loaded_turns(tmp / "session.db", sid)
    checks.append(ratio <= 1.1)
    print(f"== a turn on the recovered session, {turns} turns (median, alternating rounds)")
    print(
        f"  {_ms(compact)} with its compact history vs {_ms(objects)} with the history as "
        f"message objects (as a live session holds it): ratio {ratio:.2f} (median of the"
        f" rounds' ratios)"
        f"  goal <= 1.1x  {_verdict(checks[-1])}"
    )

    print(f"building a {fork_turns}-turn session for the fork ...", flush=True)
    fork = await forks(tmp / "fork.db", fork_turns, repeats)
    checks.append(fork["fork_s"] <= 0.005 and fork["fork_bytes"] < 1024)
    print(f"== fork from the middle, {fork_turns} turns")
    print(
        f"  {_ms(fork['fork_s'])}, {fork['fork_bytes']:.0f} B stored per fork (file growth over "
        f"{FORKS} forks; first fork's rows {fork['fork_payload']} B)  goal <= 5 ms, < 1 KB  "
        f"{_verdict(checks[-1])}"
    )
    return all(checks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--fork-turns", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--wall", action="store_true", help="wall time instead of CPU time")
    args = parser.parse_args()
    if args.wall:
        global clock
        clock = time.perf_counter
    with tempfile.TemporaryDirectory() as tmp:
        ok = asyncio.run(main_async(args.turns, args.fork_turns, args.repeats, Path(tmp)))
    print("ALL PASS" if ok else "SOME MISS")


if __name__ == "__main__":
    main()
