"""Benchmark: sub-agent dispatch overhead.

200 tasks, ``max_concurrency=10``, a model that waits 50 ms per call, on a file-backed SQLite
store with automatic checkpoints (what a user gets by default). Prints, for a *cold* run (the
process's first dispatch) and for *warm* runs (later dispatches in the same process, each on a
new file; the median of ``--warm`` runs):

- the wall time divided by the ideal (200 / 10 x 50 ms = 1 s; target <= 1.05), beside what
  bare asyncio lanes that only sleep reach in the same run (asyncio's own share of the rest);
- the peak number of concurrently running children (must equal the limit);
- the framework's CPU time per child: process CPU during the dispatch, less the same children
  run as bare asyncio tasks that only sleep (target <= 0.3 ms), and how much of it was spent
  inside the store's methods (SQL, encoding rows: the store's share, measured by timing every
  outermost store call), so the rest is the engine's own Python;
- how much of the CPU went to Python's garbage collector (part of "the rest");
- the write transactions (SQLite ``BEGIN IMMEDIATE``) and all SQL statements per child,
  counted in a dispatch of their own after the timed ones: the driver's statement trace
  formats every statement with its values, which costs more CPU than some of the statements
  themselves, so the timed runs are not traced (the counts are the same in every run).

Children are made ``limit`` at a time in one write (with their turn leases), the next group
while the lanes wait for their models, so the writes per child are a little over 1 (its
commit). ``--no-record-calls`` runs the children without model-call records, to show their
share.

``--latency 0`` gives a CPU-only figure (no model wait, no wall target). ``--turn-paths N``
instead runs N alternating pairs in this process: the children's turns as one coroutine chain
(``submit_turn``, what a dispatch runs) and the same turns driven through the streaming path's
async generators (``stream=False``), and prints each one's CPU per child.

``--trace-timed`` traces the timed runs as well (how this bench measured before: their CPU
and wall then include the trace's).

``--timeline`` adds one more dispatch whose model records each lane's waits (the model sleeps,
then answers, as ScriptedModel does) and prints where a lane's cycle (one child: from one model
call to the next) goes past the model's wait: how late the wait ended, and of that how long the
lane waited behind other lanes' work, and the lane's own work before its next call; and that
work (one step of the loop) by how long the loop sat idle before it. The lanes move in trains,
one behind the other; a train's head, the first step after the loop sat idle between waves,
finds the caches cold, and its step and its model's lateness set the period of every lane
behind it. That lateness is printed too: that dispatch's loop (and the bare lanes' once more)
runs on a selector that keeps its waits, and the median of how much its waits for a timer
overslept their timeout is shown beside the bare lanes'.

Printed last, the floors under the two goals, measured in the same run:

- **SQL alone**: one more dispatch keeps every statement it runs with its values; copies of
  the file as it was before it get the same statements, in the same order and transactions,
  from a bare ``sqlite3`` loop (median of 3): SQLite's own CPU per child, beside the 0.3 ms
  goal and the framework's CPU per child.
- **plain lanes with a child's CPU**: ``bare_lanes`` whose lanes also spin the warm CPU per
  child after each sleep: the wall ÷ ideal a child of that much CPU reaches on this machine
  with nothing of the framework (its steps all alike; a dispatch's are not: see --timeline).

Run: python bench/dispatch.py [--tasks 200] [--limit 10] [--latency 0.05] [--warm 3]
    [--no-record-calls] [--turn-paths N] [--trace-timed] [--timeline]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import itertools
import selectors
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agcore_lab import Agent, DispatchConfig, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.llm import ChatResponse, Message, ToolSpec

WALL_GOAL = 1.05  # wall ÷ ideal
CPU_GOAL_S = 0.3e-3  # framework CPU per child


@dataclass
class Run:
    wall: float
    peak: int
    ok: int
    cpu: float
    store_cpu: float
    gc_cpu: float
    writes: int
    statements: int


class _StoreClock:
    """Process CPU spent inside the store's public methods (the outermost call only)."""

    def __init__(self, store: SqliteStore) -> None:
        self.ns = 0
        self._depth = 0
        for name in dir(type(store)):
            attr = getattr(type(store), name, None)
            if name.startswith("_") or not callable(attr) or isinstance(attr, type):
                continue
            setattr(store, name, self._timed(getattr(store, name)))

    def _timed(self, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return method(*args, **kwargs)
            self._depth += 1
            started = time.process_time_ns()
            try:
                return method(*args, **kwargs)
            finally:
                self.ns += time.process_time_ns() - started
                self._depth -= 1

        return timed


class _GcClock:
    """Process CPU spent in Python's garbage collector while installed."""

    def __init__(self) -> None:
        self.ns = self._started = 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time_ns()
        else:
            self.ns += time.process_time_ns() - self._started


class _WaitsModel(ScriptedModel):
    """ScriptedModel's answer after a wait of ``wait`` seconds, recording for each wait its
    lane (the event-loop task awaiting it), when it began and when the lane resumed."""

    def __init__(self, wait: float) -> None:
        super().__init__(lambda messages: "ok")
        self.wait = wait
        self.waits: list[tuple[int, float, float]] = []

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        began = time.perf_counter()
        await asyncio.sleep(self.wait)
        self.waits.append((id(asyncio.current_task()), began, time.perf_counter()))
        return await super().complete(messages, tools=tools)


def _lane_cycles(
    waits: list[tuple[int, float, float]], wait: float
) -> list[tuple[int, float, float, float]]:
    """Each lane's cycles: (lane, when its wait was due to end, when it resumed, when its next
    wait began)."""
    lanes: dict[int, list[tuple[float, float]]] = {}
    for lane, began, resumed in waits:
        lanes.setdefault(lane, []).append((began, resumed))
    return [
        (lane, one[0] + wait, one[1], two[0])
        for lane, marks in lanes.items()
        for one, two in itertools.pairwise(sorted(marks))
    ]


def _cycles(waits: list[tuple[int, float, float]], wait: float) -> dict[str, float]:
    """Mean seconds per lane cycle past the model's wait: ``late`` (the wait ended after it
    was due), of it ``behind`` (other lanes' work was running then: the loop was busy), and
    ``work`` (the lane's own, from the end of one wait to the start of its next one)."""
    cycles = _lane_cycles(waits, wait)
    late = behind = work = 0.0
    for lane, due, resumed, then in cycles:
        late += resumed - due
        behind += sum(
            max(0.0, min(end, resumed) - max(start, due))
            for other, _, start, end in cycles
            if other != lane
        )
        work += then - resumed
    count = max(1, len(cycles))
    return {"late": late / count, "behind": behind / count, "work": work / count}


_IDLE = ((0.0001, "under 0.1 ms"), (0.005, "0.1-5 ms"), (0.02, "5-20 ms"), (None, "20 ms or more"))


def _by_idle(waits: list[tuple[int, float, float]]) -> list[tuple[str, int, float]]:
    """Each lane step's work (from a model's answer to the lane's next call: one step of the
    loop) by how long the loop sat idle before it: ``(bucket, steps, median seconds)``.

    The lanes move in trains, one behind the other: a step right behind another lane's finds
    the caches warm; a train's head, the first step after the loop sat idle between waves,
    finds them cold, and its step (with its model's lateness) sets the period of every lane
    behind it."""
    steps = sorted((resumed, then) for _, _, resumed, then in _lane_cycles(waits, 0.0))
    found: dict[str, list[float]] = {label: [] for _, label in _IDLE}
    last_end = steps[0][0] if steps else 0.0
    for resumed, then in steps:
        idle = max(0.0, resumed - last_end)
        label = next(label for bound, label in _IDLE if bound is None or idle < bound)
        found[label].append(then - resumed)
        last_end = max(last_end, then)
    return [(label, len(xs), statistics.median(xs)) for label, xs in found.items() if xs]


async def _parties(
    store: SqliteStore, latency: float, record_calls: bool, model: ScriptedModel | None = None
) -> tuple[SessionManager, str, Agent]:
    """A manager of ``store``, the lead session and the workers' agent of every dispatch."""
    manager = SessionManager(store)
    lead = await manager.create(Agent(name="lead", model=ScriptedModel()))
    worker = Agent(
        name="worker",
        model=model or ScriptedModel(lambda messages: "ok", latency=latency),
        record_calls=record_calls,
    )
    return manager, lead, worker


async def run(
    tasks: int,
    limit: int,
    latency: float,
    db: Path,
    *,
    record_calls: bool = True,
    trace: bool = False,
    model: ScriptedModel | None = None,
) -> Run:
    """One dispatch on a new file ``db``; ``trace``: count its statements (see the module
    docstring; a traced run's CPU includes the trace's); ``model``: the workers' model
    instead of a ScriptedModel that waits ``latency``."""
    store = SqliteStore(db)
    manager, lead, worker = await _parties(store, latency, record_calls, model)
    clock, collector = _StoreClock(store), _GcClock()
    gc.callbacks.append(collector)
    statements: list[str] = []
    if trace:
        store.connection.set_trace_callback(statements.append)
    started, cpu = time.perf_counter(), time.process_time()
    results = await manager.dispatch_all(
        lead,
        [(worker, f"task {i}") for i in range(tasks)],
        DispatchConfig(max_concurrency=limit),
    )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    gc.callbacks.remove(collector)
    store.connection.set_trace_callback(None)
    store.close()
    assert manager.last_dispatch is not None
    return Run(
        wall=wall,
        peak=manager.last_dispatch.peak_running,
        ok=sum(1 for r in results if not isinstance(r, Exception)),
        cpu=cpu,
        store_cpu=clock.ns / 1e9,
        gc_cpu=collector.ns / 1e9,
        writes=sum(1 for s in statements if s.startswith("BEGIN IMMEDIATE")),
        statements=sum(1 for s in statements if s not in ("BEGIN IMMEDIATE", "COMMIT")),
    )


async def bare(tasks: int, limit: int, latency: float) -> float:
    """CPU time of the same schedule as plain asyncio tasks that only sleep (the floor)."""
    gate = asyncio.Semaphore(limit)

    async def one() -> None:
        async with gate:
            await asyncio.sleep(latency)

    cpu = time.process_time()
    await asyncio.gather(*(one() for _ in range(tasks)))
    return time.process_time() - cpu


async def bare_lanes(tasks: int, limit: int, latency: float, work: float = 0.0) -> float:
    """Wall time of the schedule as ``limit`` plain asyncio lanes that only sleep, each
    taking the next task when its sleep ends (as dispatch_all's lanes do): what asyncio's
    own timers give (they fire on whole milliseconds), with no framework work at all.
    ``work``: seconds each lane also spins per task after its sleep (a child's CPU, and still
    nothing of the framework)."""
    waiting = iter(range(tasks))

    async def lane() -> None:
        for _ in waiting:
            await asyncio.sleep(latency)
            until = time.perf_counter() + work
            while time.perf_counter() < until:
                pass

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(min(limit, tasks))))
    return time.perf_counter() - started


class _Recording(sqlite3.Connection):
    """A connection that keeps every statement it runs, with its values, in order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kept: list[tuple[bool, str, Any]] = []

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        self.kept.append((False, sql, parameters))
        return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        rows = list(parameters)  # kept for the replay: an iterator would be used up
        self.kept.append((True, sql, rows))
        return super().executemany(sql, rows)


async def sql_floor(
    tasks: int,
    limit: int,
    latency: float,
    tmp: Path,
    *,
    record_calls: bool = True,
    replays: int = 3,
) -> tuple[float, int]:
    """CPU per child of the dispatch's SQL alone, and the statements replayed.

    One more dispatch on a connection that keeps every statement it runs with its values
    (``_Recording``); copies of the file as it was just before the dispatch then get the same
    statements with the same values, in the same order (same transactions), from a bare
    ``sqlite3`` loop that fetches every result (the median of ``replays`` copies): what SQLite
    itself costs a child, with no Python of the framework around it.
    """
    connect = sqlite3.connect  # the store opens its file with it
    sqlite3.connect = functools.partial(connect, factory=_Recording)  # type: ignore[assignment]
    try:
        store = SqliteStore(tmp / "recorded.db")
    finally:
        sqlite3.connect = connect
    manager, lead, worker = await _parties(store, latency, record_calls)
    recording = store.connection
    assert isinstance(recording, _Recording)
    recording.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    copies = [
        sqlite3.connect(tmp / f"replayed{n}.db", isolation_level=None) for n in range(replays)
    ]
    for copy in copies:
        recording.backup(copy)
    recording.kept.clear()
    await manager.dispatch_all(
        lead,
        [(worker, f"task {i}") for i in range(tasks)],
        DispatchConfig(max_concurrency=limit),
    )
    kept = list(recording.kept)
    store.close()
    cpu = []
    for copy in copies:
        for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON"):
            copy.execute(f"PRAGMA {pragma}")
        started = time.process_time()
        for many, sql, values in kept:
            (copy.executemany if many else copy.execute)(sql, values).fetchall()
        cpu.append(time.process_time() - started)
        copy.close()
    return statistics.median(cpu) / tasks, len(kept)


def _report(
    name: str,
    runs: list[Run],
    counted: Run,
    floor: float,
    lanes: float,
    args: argparse.Namespace,
) -> list[str]:
    ideal = args.tasks / args.limit * args.latency
    wall = statistics.median(r.wall for r in runs)
    # --latency 0 measures CPU only: there is no ideal wall to divide by.
    ratio = wall / ideal if ideal else float("nan")
    per_child = (statistics.median(r.cpu for r in runs) - floor) / args.tasks
    store = statistics.median(r.store_cpu for r in runs) / args.tasks
    collected = statistics.median(r.gc_cpu for r in runs) / args.tasks
    writes, statements = counted.writes / args.tasks, counted.statements / args.tasks
    peak = min(r.peak for r in runs)
    one = runs[0]
    print(f"{name} ({len(runs)} run{'s' if len(runs) > 1 else ''}, median):")
    if ideal:
        print(
            f"  wall ÷ ideal: {ratio:.3f} (ideal {ideal:.3f} s; target <= {WALL_GOAL}); bare "
            f"asyncio lanes that only sleep, in this run: {lanes / ideal:.3f}"
        )
    else:
        print(f"  wall: {wall * 1000:.1f} ms (latency 0: CPU only, no wall target)")
    print(f"  peak concurrently running children: {peak} (must equal {args.limit})")
    print(
        f"  framework CPU per child: {per_child * 1000:.3f} ms (target <= "
        f"{CPU_GOAL_S * 1000} ms); in the store's methods: {store * 1000:.3f} ms, the rest: "
        f"{(per_child - store) * 1000:.3f} ms "
        f"(of it the garbage collector: {collected * 1000:.3f} ms)"
    )
    print(
        f"  write transactions per child: {writes:.2f}; SQL statements per "
        f"child: {statements:.1f} (counted in a traced run); completed: {one.ok}/{args.tasks}"
    )
    overhead = [f"{'PASS' if ratio <= WALL_GOAL else 'MISS'} {name} overhead"] if ideal else []
    return [
        *overhead,
        f"{'PASS' if peak == args.limit else 'MISS'} {name} peak",
        f"{'PASS' if per_child <= CPU_GOAL_S else 'MISS'} {name} CPU per child",
    ]


def _turn_paths(args: argparse.Namespace, tmp: Path) -> None:
    # Same-process A/B of a child's turn: the plain coroutine chain against the generator
    # layers it replaced (AgentSession._turn with stream=False), alternating, on new files.
    from agcore_lab import AgentSession, TurnDone

    plain = AgentSession.submit_turn

    async def generators(self: AgentSession, text: str, *, wait: float = 0.0) -> Any:
        result = None
        async for event in self._turn(text, stream=False, wait=wait):
            if isinstance(event, TurnDone):
                result = event.result
        return result

    paths: dict[str, Any] = {"coroutine chain": plain, "async generators": generators}
    cpu: dict[str, list[float]] = {name: [] for name in paths}
    asyncio.run(run(args.tasks, args.limit, args.latency, tmp / "warm.db"))
    try:
        for pair in range(args.turn_paths):
            order = list(paths) if pair % 2 else list(reversed(paths))
            for name in order:
                AgentSession.submit_turn = paths[name]  # type: ignore[method-assign]
                one = asyncio.run(
                    run(args.tasks, args.limit, args.latency, tmp / f"p{pair}{len(name)}.db")
                )
                cpu[name].append(one.cpu / args.tasks * 1000)
    finally:
        AgentSession.submit_turn = plain  # type: ignore[method-assign]
    for name, figures in cpu.items():
        print(
            f"{name}: process CPU per child (bare floor included) median "
            f"{statistics.median(figures):.3f} ms, range {min(figures):.3f}-"
            f"{max(figures):.3f} ({len(figures)} runs)"
        )
    chain, gens = (
        statistics.median(cpu["coroutine chain"]),
        statistics.median(cpu["async generators"]),
    )
    print(f"{'PASS' if chain <= gens else 'MISS'} coroutine chain <= async generators")


class _TimedSelector(selectors.DefaultSelector):
    """The loop's selector, keeping each wait with a timeout: ``(timeout, seconds waited)``."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[tuple[float, float]] = []

    def select(self, timeout: float | None = None) -> list[Any]:
        started = time.perf_counter()
        ready = super().select(timeout)
        if timeout:
            self.waits.append((timeout, time.perf_counter() - started))
        return ready


def _timed_loop(main: Any) -> tuple[Any, float]:
    """``asyncio.run(main)`` on a loop whose selector keeps its waits; and how much the waits
    longer than 2 ms (for a timer: a model's) overslept their timeout, the median."""
    selector = _TimedSelector()
    with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(selector)) as runner:
        result = runner.run(main)
    over = [waited - timeout for timeout, waited in selector.waits if timeout > 0.002]
    return result, statistics.median(over) if over else 0.0


def _timeline(args: argparse.Namespace, tmp: Path) -> str:
    # One more dispatch, its workers' model recording each lane's waits (see _cycles), on a
    # loop whose selector keeps its waits (and the bare lanes once more, the same way).
    model = _WaitsModel(args.latency)
    one, overslept = _timed_loop(run(args.tasks, args.limit, 0.0, tmp / "timeline.db", model=model))
    _, bare_overslept = _timed_loop(bare_lanes(args.tasks, args.limit, args.latency))
    cycle = _cycles(model.waits, args.latency)
    return (
        f"timeline (one more dispatch, wall ÷ ideal "
        f"{one.wall / (args.tasks / args.limit * args.latency):.3f}): a lane's cycle is the "
        f"model's {args.latency * 1000:.0f} ms + {cycle['late'] * 1000:.2f} ms late (of it "
        f"{cycle['behind'] * 1000:.2f} ms behind other lanes' work) + "
        f"{cycle['work'] * 1000:.2f} ms of its own work\n  a lane's step (median) by how long "
        "the loop sat idle before it: "
        + "; ".join(
            f"{label}: {value * 1000:.2f} ms ({steps} steps)"
            for label, steps, value in _by_idle(model.waits)
        )
        + f"\n  the loop's waits for a timer overslept by {overslept * 1000:.2f} ms (median; "
        f"the bare lanes': {bare_overslept * 1000:.2f} ms): epoll waits whole milliseconds, "
        "and a dispatch's loop goes idle well after the timer it waits for was set"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--warm", type=int, default=3, help="warm runs after the cold one")
    parser.add_argument(
        "--no-record-calls", action="store_true", help="children keep no model-call records"
    )
    parser.add_argument(
        "--turn-paths", type=int, default=0, help="A/B pairs: coroutine chain vs generators"
    )
    parser.add_argument(
        "--trace-timed",
        action="store_true",
        help="trace the timed runs' statements too (their CPU then includes the trace's)",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="one more dispatch: where each lane's cycle goes past the model's wait",
    )
    args = parser.parse_args()
    record = not args.no_record_calls
    if args.turn_paths:
        with tempfile.TemporaryDirectory() as tmp:
            _turn_paths(args, Path(tmp))
        return
    print(
        f"tasks: {args.tasks}  limit: {args.limit}  latency: {args.latency}s  "
        f"model-call records: {'on' if record else 'off'}"
    )
    with tempfile.TemporaryDirectory() as tmp:

        def one(name: str, trace: bool) -> Run:
            db = Path(tmp) / f"{name}.db"
            return asyncio.run(
                run(args.tasks, args.limit, args.latency, db, record_calls=record, trace=trace)
            )

        runs = [one(f"d{i}", args.trace_timed) for i in range(1 + max(0, args.warm))]
        counted = runs[-1] if args.trace_timed else one("counted", True)
        timeline = _timeline(args, Path(tmp)) if args.timeline and args.latency else None
    floor = statistics.median(
        asyncio.run(bare(args.tasks, args.limit, args.latency)) for _ in range(3)
    )
    lanes = statistics.median(
        asyncio.run(bare_lanes(args.tasks, args.limit, args.latency)) for _ in range(3)
    )
    print(
        f"bare asyncio floor: {floor * 1000:.1f} ms CPU for the whole schedule; as lanes that "
        f"only sleep: {lanes:.3f} s wall"
    )
    verdicts = _report("cold", runs[:1], counted, floor, lanes, args)
    if len(runs) > 1:
        verdicts += _report("warm", runs[1:], counted, floor, lanes, args)
    if timeline is not None:
        print(timeline)
    _floors(args, runs[1:] or runs, floor, record)
    print(", ".join(verdicts))


def _floors(args: argparse.Namespace, runs: list[Run], floor: float, record: bool) -> None:
    # The floors under the two goals, measured in this run (see sql_floor and bare_lanes).
    per_child = (statistics.median(r.cpu for r in runs) - floor) / args.tasks
    with tempfile.TemporaryDirectory() as tmp:
        sql, statements = asyncio.run(
            sql_floor(args.tasks, args.limit, args.latency, Path(tmp), record_calls=record)
        )
    print("floors (this run):")
    print(
        f"  SQL alone: the dispatch's {statements / args.tasks:.1f} calls per child (execute or "
        "executemany, BEGIN and COMMIT among them), with their values, replayed by a bare "
        f"sqlite3 loop on copies of the file: "
        f"{sql * 1000:.3f} ms CPU per child ({sql / CPU_GOAL_S:.0%} of the "
        f"{CPU_GOAL_S * 1000} ms goal; the framework's {per_child * 1000:.3f} ms is "
        f"{per_child / sql:.1f}x it)"
    )
    if args.latency:
        ideal = args.tasks / args.limit * args.latency
        spun = statistics.median(
            asyncio.run(bare_lanes(args.tasks, args.limit, args.latency, per_child))
            for _ in range(3)
        )
        print(
            f"  plain asyncio lanes that spin {per_child * 1000:.3f} ms (the framework CPU per "
            f"child above) after each sleep, no framework: wall ÷ ideal {spun / ideal:.3f} (what "
            f"a child of that CPU reaches on this machine; the goal is {WALL_GOAL})"
        )


if __name__ == "__main__":
    main()
