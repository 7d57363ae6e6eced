"""Benchmark: a 1,000-turn session on ScriptedModel with a file-backed SQLite store.

Prints turns per second and the ratio of the median turn time of turns 950-1000 to that of
turns 10-60. The ratio must stay below 1.5: a turn must not get slower as history grows
(messages are stored once and a turn writes only what it added).

The whole session is run ``--repeats`` times (3 by default), each on a fresh file; for each
turn number the fastest of the repeats is kept before taking medians, which filters out noise
from other processes on a small machine. Single-run figures are printed too.

Then the cost of recording model calls (``ModelCall`` records, issue 15): the same session is
run with recording on and with it off (``Agent(record_calls=False)``), alternating, in the same
process, ``--repeats`` times each; for each turn number the fastest of the repeats is kept and
the medians over all turns are compared. Target: recording adds < 5% to a turn; off, nothing is
recorded (no rows, no recorder). The same comparison is then made turn by turn: one session
with recording on and one with it off take alternate turns (who goes first alternates too), so
a busy machine slows both alike; it prints the difference in microseconds per turn as well.
Both figures of one process also depend on that process (its hash seed, where its objects
land in memory: the same code under two names measured in one process differs by up to ~1 µs
a turn of overhead; whole sessions, run one after another, also move with the machine's load),
so both comparisons are then run in ``--processes`` fresh interpreters (5 by default), one
after another: it prints each one's overheads, their means and 95% confidence intervals
(Student's t over the processes). The target is met when the alternate turns' interval is
under 5% (its upper bound): that comparison puts the same load on both sides, while whole
sessions, run one after another, take a burst of load on one side only (on this shared
machine one run printed +46% for a process whose alternate turns said +4.5%), so their
figure is information. The figures of this process are printed first, for information too.
It also prints the bytes the call log adds per call (from ``dbstat``: the ``call_rows`` and
``call_blobs`` tables, and what ``chain_nodes`` holds more with recording on than off — a
turn's usual call rides on its answer's row, schema 12): all the messages of these calls are
in the chains already, so this is the whole overhead beyond new content (goal < 200 B).

Last, the turn cost at a long history (issue 16): a session with ``--long`` turns (10,000 by
default) and fresh sessions of 100 turns take turns in alternating rounds of 20, in the same
process and the same conditions; the ratio of their median turn times must be <= 1.1 (a turn
costs O(what it adds), not O(history)).

Run: python bench/turns.py [--turns 1000] [--repeats 3] [--long 10000] [--rounds 15]
[--processes 5] [--only recording]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from agcore_lab import (
    Agent,
    AgentSession,
    Message,
    ScriptedModel,
    SqliteStore,
    ToolCall,
    UserMessage,
)


def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"value of {key}"


def _script(messages: Sequence[Message]) -> str | ToolCall:
    # Every fifth turn (turn numbers 4, 9, 14, ...) makes a tool call and then answers its
    # result, so the tool loop is part of the measurement. The turn number is read from the
    # last message (the turn's text, "turn 9: ..."): O(1), whatever the history's length.
    # (The message count cannot tell: it is odd at every request, with or without a tool.)
    last = messages[-1]
    count = len(messages)
    if isinstance(last, UserMessage) and int(last.content.split(":", 1)[0].split()[-1]) % 5 == 4:
        return ToolCall(name="lookup", arguments={"key": f"k{count}"})
    return f"answer {count}"


async def run(turns: int, db: Path, *, record_calls: bool = True) -> list[float]:
    agent = Agent(
        name="bench", model=ScriptedModel(_script), tools=[lookup], record_calls=record_calls
    )
    session = AgentSession(agent, store=SqliteStore(db))
    durations = []
    for i in range(turns):
        start = time.perf_counter()
        await session.submit_turn(f"turn {i}: tell me something about item {i}")
        durations.append(time.perf_counter() - start)
    return durations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--long", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--processes",
        type=int,
        default=5,
        help="fresh interpreters for the alternate-turns overhead (at least 2)",
    )
    parser.add_argument(
        "--only",
        choices=["recording", "recording-worker"],
        help="run only these rows (recording: the overheads; recording-worker: one process's "
        "alternate turns, printed as JSON, for --processes)",
    )
    args = parser.parse_args()
    if args.turns < 100:
        parser.error("--turns must be at least 100 (the windows are turns 10-60 and the last 50)")
    if args.processes < 2:
        parser.error("--processes must be at least 2 (a confidence interval needs two figures)")
    if args.only == "recording-worker":
        print(json.dumps(_worker_medians(args.turns, args.repeats)))
        return
    if args.only == "recording":
        recording(args.turns, args.repeats)
        recording_interleaved(args.turns, args.repeats)
        recording_processes(args.turns, args.repeats, args.processes)
        return
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            started = time.perf_counter()
            durations = asyncio.run(run(args.turns, Path(tmp) / f"bench-{repeat}.db"))
            total = time.perf_counter() - started
            early, late = _windows(durations)
            print(
                f"run {repeat + 1}: {args.turns} turns in {total:.2f} s = "
                f"{args.turns / total:.1f} turns/s; ratio {late / early:.3f}"
            )
            runs.append(durations)
    best = [min(column) for column in zip(*runs, strict=True)]
    early, late = _windows(best)
    print(f"median turn 10-60: {early * 1000:.3f} ms  median last 50 turns: {late * 1000:.3f} ms")
    print(f"ratio late/early: {late / early:.3f} (target < 1.5)")
    recording(args.turns, args.repeats)
    recording_interleaved(args.turns, args.repeats)
    recording_processes(args.turns, args.repeats, args.processes)
    asyncio.run(scaling(args.long, args.rounds))


async def _fill(turns: int, db: Path) -> AgentSession:
    agent = Agent(name="bench", model=ScriptedModel(_script), tools=[lookup])
    session = AgentSession(agent, store=SqliteStore(db))
    for i in range(turns):
        await session.submit_turn(f"turn {i}: tell me something about item {i}")
    return session


async def _timed(session: AgentSession, turns: int) -> list[float]:
    durations = []
    for i in range(turns):
        start = time.perf_counter()
        await session.submit_turn(f"more {i}: tell me something about item {i}")
        durations.append(time.perf_counter() - start)
    return durations


async def scaling(long: int, rounds: int, batch: int = 20) -> None:
    """Median turn time at ``long`` turns of history against at 100, interleaved."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        old = await _fill(long, Path(tmp) / "long.db")
        filled = time.perf_counter() - started
        at_long: list[float] = []
        at_100: list[float] = []
        for number in range(rounds):
            young = await _fill(100, Path(tmp) / f"young-{number}.db")
            if number % 2:
                at_long += await _timed(old, batch)
                at_100 += await _timed(young, batch)
            else:
                at_100 += await _timed(young, batch)
                at_long += await _timed(old, batch)
    ratio = statistics.median(at_long) / statistics.median(at_100)
    print(
        f"turn at {long:,} turns of history: {statistics.median(at_long) * 1000:.3f} ms, at 100: "
        f"{statistics.median(at_100) * 1000:.3f} ms: ratio {ratio:.3f} (target <= 1.1) "
        f"{'PASS' if ratio <= 1.1 else 'MISS'} (filled {long:,} turns in {filled:.1f} s)"
    )


def _table_bytes(db: Path) -> tuple[dict[str, int], dict[str, int], int]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT name, sum(pgsize), sum(payload) FROM dbstat GROUP BY name")
        pages, payload = {}, {}
        for name, size, used in rows:
            pages[name], payload[name] = size, used
        calls = conn.execute("SELECT count(*) FROM model_calls").fetchone()[0]
    finally:
        conn.close()
    return pages, payload, calls


def _whole_runs(turns: int, repeats: int, tmp: Path) -> dict[bool, list[list[float]]]:
    """Whole sessions with recording on and off, alternating (who goes first alternates too),
    ``repeats`` each, their files in ``tmp``: each side's turn times, run by run."""
    runs: dict[bool, list[list[float]]] = {True: [], False: []}
    for repeat in range(repeats):
        for on in (False, True) if repeat % 2 == 0 else (True, False):
            db = tmp / f"rec-{on}-{repeat}.db"
            runs[on].append(asyncio.run(run(turns, db, record_calls=on)))
    return runs


def recording(turns: int, repeats: int) -> None:
    """Turn time with and without recording model calls, in the same run."""
    with tempfile.TemporaryDirectory() as tmp:
        medians = _medians(_whole_runs(turns, repeats, Path(tmp)))
        sizes, payload, calls = _table_bytes(Path(tmp) / f"rec-True-{repeats - 1}.db")
        off_sizes, off_payload, off_calls = _table_bytes(Path(tmp) / f"rec-False-{repeats - 1}.db")
    overhead = medians[True] / medians[False] - 1
    print(
        f"recording calls: median turn {medians[True] * 1000:.3f} ms on, "
        f"{medians[False] * 1000:.3f} ms off: overhead {overhead * 100:+.1f}% "
        "(this process; the verdict is the fresh processes' below)"
    )
    tables = [n for n in sizes if n in ("call_rows", "call_blobs") or n.startswith("call_rows_")]
    # The calls riding on their answers' rows: what chain_nodes holds more than without them.
    riding_pages = sizes.get("chain_nodes", 0) - off_sizes.get("chain_nodes", 0)
    riding_payload = payload.get("chain_nodes", 0) - off_payload.get("chain_nodes", 0)
    log_bytes = sum(sizes[n] for n in tables) + riding_pages
    row_bytes = sum(payload[n] for n in tables) + riding_payload
    per_call, per_row = log_bytes / max(calls, 1), row_bytes / max(calls, 1)
    print(
        f"call log: {calls} calls ({riding_payload / max(calls, 1):.0f} B each riding on its "
        f"answer's row); {per_row:.0f} B of row payload per call "
        f"({'PASS' if per_row < 200 else 'MISS'}), {per_call:.0f} B of database pages per call "
        f"({'PASS' if per_call < 200 else 'MISS'}), beyond the messages (goal < 200 B); "
        f"recording off: {off_calls} calls stored {'PASS' if off_calls == 0 else 'MISS'}"
    )


async def _alternate(turns: int, tmp: Path, repeat: int) -> dict[bool, list[float]]:
    sessions = {
        on: AgentSession(
            Agent(name="bench", model=ScriptedModel(_script), tools=[lookup], record_calls=on),
            store=SqliteStore(tmp / f"alt-{on}-{repeat}.db"),
        )
        for on in (True, False)
    }
    durations: dict[bool, list[float]] = {True: [], False: []}
    for i in range(turns):
        for on in (True, False) if i % 2 else (False, True):
            start = time.perf_counter()
            await sessions[on].submit_turn(f"turn {i}: tell me something about item {i}")
            durations[on].append(time.perf_counter() - start)
    return durations


def _alternate_runs(turns: int, repeats: int) -> dict[bool, list[list[float]]]:
    """``repeats`` runs of :func:`_alternate`: each side's turn times, run by run."""
    runs: dict[bool, list[list[float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):
            durations = asyncio.run(_alternate(turns, Path(tmp), repeat))
            for on in (True, False):
                runs[on].append(durations[on])
    return runs


def _medians(runs: dict[bool, list[list[float]]]) -> dict[bool, float]:
    """Each side's median over turns of the fastest of the runs at each turn number."""
    return {
        on: statistics.median([min(column) for column in zip(*runs[on], strict=True)])
        for on in (True, False)
    }


def _worker_medians(turns: int, repeats: int) -> dict[str, float]:
    """One process's medians, whole sessions then alternate turns (``recording-worker``)."""
    with tempfile.TemporaryDirectory() as tmp:
        whole = _medians(_whole_runs(turns, repeats, Path(tmp)))
    alternate = _medians(_alternate_runs(turns, repeats))
    return {
        "whole_on": whole[True],
        "whole_off": whole[False],
        "on": alternate[True],
        "off": alternate[False],
    }


def recording_interleaved(turns: int, repeats: int) -> None:
    """Turn time with and without recording, the two sessions taking alternate turns."""
    runs = _alternate_runs(turns, repeats)
    medians = _medians(runs)
    overhead = medians[True] / medians[False] - 1
    print(
        f"recording calls, alternate turns: median turn {medians[True] * 1000:.3f} ms on, "
        f"{medians[False] * 1000:.3f} ms off: overhead {overhead * 100:+.1f}% = "
        f"{(medians[True] - medians[False]) * 1e6:+.1f} us per turn (this process; the "
        "verdict is the fresh processes' below)"
    )
    # The turns with a tool call (two model calls each) on their own: the median above is
    # that of the other turns, four in five.
    tool = {
        on: statistics.median([min(column) for column in zip(*runs[on], strict=True)][4::5])
        for on in (True, False)
    }
    print(
        f"  of which turns with a tool call: {tool[True] * 1000:.3f} ms on, "
        f"{tool[False] * 1000:.3f} ms off: {(tool[True] / tool[False] - 1) * 100:+.1f}% = "
        f"{(tool[True] - tool[False]) * 1e6:+.1f} us per turn"
    )


# Student's t for a two-sided 95% interval, by degrees of freedom (1-30; 1.96 beyond).
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def interval(values: Sequence[float]) -> tuple[float, float, float]:
    """The mean of ``values`` (two or more) and its 95% confidence interval (Student's t)."""
    mean = statistics.fmean(values)
    t = _T95[len(values) - 2] if len(values) - 1 <= len(_T95) else 1.96
    half = t * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def recording_processes(turns: int, repeats: int, processes: int) -> bool:
    """Both overheads (whole sessions, alternate turns) in ``processes`` fresh interpreters,
    one after another: each one's figures, their means and 95% confidence intervals; ``True``
    (PASS) when the alternate turns' interval is under 5% (its upper bound; the whole
    sessions' figure is information)."""
    figures: dict[str, list[float]] = {"whole": [], "alternate": []}
    extra: dict[str, list[float]] = {"whole": [], "alternate": []}
    for _ in range(processes):
        done = subprocess.run(
            [sys.executable, __file__, "--only", "recording-worker", "--turns", str(turns)]
            + ["--repeats", str(repeats)],
            capture_output=True,
            text=True,
            check=True,
        )
        medians = json.loads(done.stdout.splitlines()[-1])
        for name, prefix in (("whole", "whole_"), ("alternate", "")):
            on, off = medians[f"{prefix}on"], medians[f"{prefix}off"]
            figures[name].append((on / off - 1) * 100)
            extra[name].append((on - off) * 1e6)
    passed = False
    for name, label in (("whole", "whole sessions"), ("alternate", "alternate turns")):
        mean, low, high = interval(figures[name])
        if name == "whole":
            verdict = (
                "(information: sessions run one after another, so a burst of load on the "
                "machine falls on one side)"
            )
        else:
            passed = high < 5
            verdict = f"(target: the interval under 5%) {'PASS' if passed else 'MISS'}"
        print(
            f"recording calls, {label} in {processes} fresh processes: "
            f"{', '.join(f'{o:+.1f}%' for o in figures[name])}; mean {mean:+.2f}%, 95% interval "
            f"[{low:+.2f}%, {high:+.2f}%] (= {statistics.fmean(extra[name]):+.1f} us per turn) "
            f"{verdict}"
        )
    return passed


def _windows(durations: list[float]) -> tuple[float, float]:
    return statistics.median(durations[10:60]), statistics.median(durations[-50:])


if __name__ == "__main__":
    main()
