"""Benchmark: the async store seam — a direct call on the loop or a thread hop, per backend.

``as_async(store)`` wraps a sync ``Store`` in ``ThreadedAsyncStore``, which either calls the
sync method directly on the event loop (``hop=False``) or runs it in a worker thread
(``hop=True``). This measures both on both backends, in the same process, and checks the
choice each backend makes (``SqliteStore.async_hop = False``, ``PostgresStore.async_hop =
True``):

1. Per-call cost of one indexed read (``session_version``): the plain sync call, the adapter
   direct, the adapter hopping. Goal (SQLite): the direct adapter adds < 5 µs per call to the
   sync call, and a hop costs more than a direct call (so direct is the right choice there).
2. Concurrency (both backends): 8 tasks x N reads at once, and the longest the loop was
   blocked meanwhile (a 1 ms ticker's worst gap). With a hop, the loop serves other tasks
   while a call waits; directly, every call blocks the whole loop. On PostgreSQL also 8 tasks
   x 10 round trips that take 2 ms each (``SELECT pg_sleep(0.002)``: a server across a
   network, or a slow query). Goal (PostgreSQL): with those, the hop gives >= 2x the direct
   throughput, and the loop's worst gap is smaller hopping (so hopping is the right choice
   there even though a loopback read is cheaper direct — the figures show by how much).
3. A turn on SQLite (AgentSession on ScriptedModel, file store) with the direct adapter and
   with a hopping one, alternating rounds; medians. Goal: direct is not slower (<= 1.03x the
   hop's median) — compare the absolute figure with ``bench/turns.py`` on the code before the
   seam for the "before" figure.

PostgreSQL: ``--url`` or ``AGCORE_TEST_POSTGRES_URL``, else a throwaway server from Debian's
binaries (:class:`agcore_lab.testing.postgres_server.TemporaryPostgres`); skipped (and said
so) when none can be had.

Run: python bench/store_seam.py [--calls 5000] [--turns 200] [--rounds 5] [--url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from agcore_lab import Agent, AgentSession, RuntimeBundle, ScriptedModel, SqliteStore
from agcore_lab.store.base import SessionRecord, Store
from agcore_lab.store.threaded import ThreadedAsyncStore, as_async


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def per_call(fn: Callable[[], object], calls: int, repeats: int = 5) -> float:
    """Best-of-``repeats`` seconds per call of ``fn``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def per_async_call(adapter: ThreadedAsyncStore, sid: str, calls: int, repeats: int = 5) -> float:
    async def run() -> float:
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(calls):
                await adapter.asession_version(sid)
            best = min(best, (time.perf_counter() - start) / calls)
        return best

    return asyncio.run(run())


def concurrent(adapter: ThreadedAsyncStore, sid: str, calls: int) -> tuple[float, float]:
    """8 tasks x ``calls`` reads at once: (reads per second, the loop's worst gap in s)."""

    async def run() -> tuple[float, float]:
        gaps: list[float] = []
        stop = asyncio.Event()

        async def ticker() -> None:
            last = time.perf_counter()
            while not stop.is_set():
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        async def reader() -> None:
            for _ in range(calls):
                await adapter.asession_version(sid)

        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        start = time.perf_counter()
        await asyncio.gather(*(reader() for _ in range(8)))
        took = time.perf_counter() - start
        stop.set()
        await tick
        return 8 * calls / took, max(gaps, default=0.0)

    return asyncio.run(run())


def slow_round_trips(adapter: ThreadedAsyncStore, tasks: int = 8, calls: int = 10) -> float:
    """Round trips per second of ``tasks`` tasks x ``calls`` 2 ms queries at once."""

    async def run() -> float:
        async def worker() -> None:
            for _ in range(calls):
                await adapter.aread_dataframe("SELECT pg_sleep(0.002) AS slept")

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(tasks)))
        return tasks * calls / (time.perf_counter() - start)

    return asyncio.run(run())


def seam_figures(name: str, store: Store, calls: int) -> dict[str, float]:
    sid = "bench-" + uuid.uuid4().hex[:8]
    store.create_session(SessionRecord(session_id=sid, agent_name="a"))
    direct = ThreadedAsyncStore(store, hop=False)
    hop = ThreadedAsyncStore(store, hop=True)
    sync_s = per_call(lambda: store.session_version(sid), calls)
    direct_s = per_async_call(direct, sid, calls)
    hop_s = per_async_call(hop, sid, calls)
    n = max(20, calls // 40)
    direct_rate, direct_gap = concurrent(direct, sid, n)
    hop_rate, hop_gap = concurrent(hop, sid, n)
    print(
        f"{name}: one read  sync {sync_s * 1e6:7.1f} µs | direct {direct_s * 1e6:7.1f} µs "
        f"(+{(direct_s - sync_s) * 1e6:.1f}) | hop {hop_s * 1e6:7.1f} µs "
        f"(+{(hop_s - sync_s) * 1e6:.1f})"
    )
    print(
        f"{name}: 8 tasks   direct {direct_rate:9.0f} reads/s, loop blocked up to "
        f"{direct_gap * 1e3:6.1f} ms | hop {hop_rate:9.0f} reads/s, up to {hop_gap * 1e3:6.1f} ms"
    )
    chosen = as_async(store)
    assert isinstance(chosen, ThreadedAsyncStore)
    print(f"{name}: as_async chooses hop={chosen.hop}")
    return {
        "sync": sync_s,
        "direct": direct_s,
        "hop": hop_s,
        "direct_rate": direct_rate,
        "hop_rate": hop_rate,
        "direct_gap": direct_gap,
        "hop_gap": hop_gap,
        "chosen_hop": float(chosen.hop),
    }


def turn_medians(path: Path, turns: int, rounds: int) -> tuple[float, float]:
    """Median turn time with the direct adapter and with a hopping one (alternating)."""
    times: dict[bool, list[float]] = {False: [], True: []}
    for round_no in range(rounds):
        for hop in (False, True) if round_no % 2 == 0 else (True, False):
            store = SqliteStore(path / f"turns-{round_no}-{hop}.db")
            bundle = RuntimeBundle(store=store)
            bundle._astore = ThreadedAsyncStore(store, hop=hop)  # force the mode under test
            session = AgentSession(
                Agent(name="a", model=ScriptedModel(["ok"] * (turns + 1))), bundle=bundle
            )

            async def run(session: AgentSession = session, hop: bool = hop) -> None:
                for n in range(turns):
                    start = time.perf_counter()
                    await session.submit_turn(f"turn {n}")
                    times[hop].append(time.perf_counter() - start)

            asyncio.run(run())
            store.close()
    return statistics.median(times[False]), statistics.median(times[True])


@contextmanager
def postgres(url: str | None) -> Iterator[str | None]:
    url = url or os.environ.get("AGCORE_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    from agcore_lab.testing.postgres_server import PostgresUnavailable, TemporaryPostgres

    try:
        server = TemporaryPostgres()
        started = server.start()
    except PostgresUnavailable as exc:
        print(f"PostgreSQL: skipped ({exc})")
        yield None
        return
    try:
        yield started
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--url", default=None, help="a PostgreSQL server to use")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        lite = seam_figures("SQLite", SqliteStore(Path(tmp) / "seam.db"), args.calls)
        added = (lite["direct"] - lite["sync"]) * 1e6
        good = added < 5 and lite["hop"] > lite["direct"] and not lite["chosen_hop"]
        ok &= good
        print(
            f"SQLite: direct adds {added:.1f} µs per call (goal < 5), a hop costs "
            f"{lite['hop'] / lite['direct']:.1f}x a direct call (goal > 1), as_async direct: "
            f"{verdict(good)}"
        )
        direct_turn, hop_turn = turn_medians(Path(tmp), args.turns, args.rounds)
        good = direct_turn <= 1.03 * hop_turn
        ok &= good
        print(
            f"SQLite turn: median {direct_turn * 1e3:.3f} ms direct, {hop_turn * 1e3:.3f} ms "
            f"hopping ({direct_turn / hop_turn:.3f}x, goal <= 1.03): {verdict(good)}"
        )
    with postgres(args.url) as url:
        if url is not None:
            from agcore_lab.store.postgres import PostgresStore

            store = PostgresStore(url, schema="bench_" + uuid.uuid4().hex[:8])
            try:
                pg = seam_figures("PostgreSQL", store, max(200, args.calls // 10))
                slow_direct = slow_round_trips(ThreadedAsyncStore(store, hop=False))
                slow_hop = slow_round_trips(ThreadedAsyncStore(store, hop=True))
            finally:
                store.drop_schema()
                store.close()
            speedup = slow_hop / slow_direct
            print(
                f"PostgreSQL: 8 tasks x 2 ms round trips  direct {slow_direct:6.0f}/s | hop "
                f"{slow_hop:6.0f}/s"
            )
            good = speedup >= 2 and pg["hop_gap"] < pg["direct_gap"] and bool(pg["chosen_hop"])
            ok &= good
            print(
                f"PostgreSQL: 2 ms round trips go {speedup:.1f}x faster hopping (goal >= 2), the "
                f"loop blocked up to {pg['hop_gap'] * 1e3:.1f} ms hopping vs "
                f"{pg['direct_gap'] * 1e3:.1f} ms direct (goal: less), as_async hops: "
                f"{verdict(good)}"
            )
    print("ALL PASS" if ok else "SOME MISS")


if __name__ == "__main__":
    main()
