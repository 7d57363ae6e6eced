"""Benchmark: sub-agent dispatch overhead.

200 tasks, ``max_concurrency=10``, a model that waits 50 ms per call, on a file-backed SQLite
store with automatic checkpoints (what a user gets by default). Prints the wall time divided by
the ideal (200 / 10 x 50 ms = 1 s; target <= 1.05), the peak number of concurrently running
children (must equal the limit), and the framework's CPU time per child (process CPU during the
dispatch, less the same children run as bare asyncio tasks that only sleep: target <= 0.3 ms),
with the write transactions per child (SQLite ``BEGIN IMMEDIATE``).

Run: python bench/dispatch.py [--tasks 200] [--limit 10] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from agcore_lab import Agent, DispatchConfig, ScriptedModel, SessionManager, SqliteStore


async def run(
    tasks: int, limit: int, latency: float, db: Path
) -> tuple[float, int, int, float, int]:
    store = SqliteStore(db)
    manager = SessionManager(store)
    lead = await manager.create(Agent(name="lead", model=ScriptedModel()))
    worker = Agent(name="worker", model=ScriptedModel(lambda messages: "ok", latency=latency))
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    started, cpu = time.perf_counter(), time.process_time()
    results = await manager.dispatch_all(
        lead, [(worker, f"task {i}") for i in range(tasks)], DispatchConfig(max_concurrency=limit)
    )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    store.connection.set_trace_callback(None)
    assert manager.last_dispatch is not None
    ok = sum(1 for r in results if not isinstance(r, Exception))
    writes = sum(1 for s in statements if s.startswith("BEGIN IMMEDIATE"))
    return wall, manager.last_dispatch.peak_running, ok, cpu, writes


async def bare(tasks: int, limit: int, latency: float) -> float:
    """CPU time of the same schedule as plain asyncio tasks that only sleep (the floor)."""
    gate = asyncio.Semaphore(limit)

    async def one() -> None:
        async with gate:
            await asyncio.sleep(latency)

    cpu = time.process_time()
    await asyncio.gather(*(one() for _ in range(tasks)))
    return time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    ideal = args.tasks / args.limit * args.latency
    with tempfile.TemporaryDirectory() as tmp:
        wall, peak, ok, cpu, writes = asyncio.run(
            run(args.tasks, args.limit, args.latency, Path(tmp) / "d.db")
        )
    floor = asyncio.run(bare(args.tasks, args.limit, args.latency))
    ratio = wall / ideal
    per_child = (cpu - floor) / args.tasks
    print(f"tasks: {args.tasks}  completed: {ok}  limit: {args.limit}  latency: {args.latency}s")
    print(f"wall: {wall:.3f} s  ideal: {ideal:.3f} s  overhead ratio: {ratio:.3f} (target <= 1.05)")
    print(f"peak concurrently running children: {peak} (must equal {args.limit})")
    print(
        f"framework CPU per child: {per_child * 1000:.3f} ms (dispatch {cpu:.3f} s, bare asyncio "
        f"{floor:.3f} s; target <= 0.3 ms); write transactions per child: "
        f"{writes / args.tasks:.1f}"
    )
    verdicts = [
        "PASS" if ratio <= 1.05 else "MISS",
        "PASS" if peak == args.limit else "MISS",
        "PASS" if per_child <= 0.3e-3 else "MISS",
    ]
    print(f"{verdicts[0]} overhead, {verdicts[1]} peak, {verdicts[2]} CPU per child")


if __name__ == "__main__":
    main()
