"""Benchmark: checkpoint cost as a session grows (SessionManager + Checkpointer, file store).

Sessions of 100, 500 and 1,000 turns on ScriptedModel, two messages of 300 characters per
turn (the user's text and a deterministic reply), an automatic checkpoint after every turn, on
a SQLite file in a temporary directory. For each size it prints:

- checkpoint write time: the median of turns 10-60 and of the last 50 turns, and their ratio
  (target < 1.5: a checkpoint must not get slower as history grows). A turn's automatic
  checkpoint is written in the turn's own commit (one transaction: the turn's rows, the
  session's version and the checkpoint), so there is no separate write to time any more: what
  is timed is the whole ``submit_turn``, the turn with its checkpoint (before that change, the
  hook's own write around ``Checkpointer.checkpoint_locked``). As in ``bench/turns.py`` each
  size runs ``--repeats`` times on fresh files and, for each turn number, the fastest of the
  repeats is kept before taking the medians (filters out other processes' noise on a small
  machine);
- database bytes per turn / raw message bytes per turn (target < 2). Bytes per turn is the
  growth of the database file (after ``PRAGMA wal_checkpoint(TRUNCATE)``) from just after the
  session was created to the end, divided by the turns; raw is the UTF-8 size of the two
  messages' text. Where the bytes go is shown per table (``dbstat``);
- time to list all checkpoints (``list_checkpoints``, best of 5; target < 50 ms at 1,000);
- rollback time to the first (oldest) checkpoint of the live session (target < 20 ms at 1,000),
  and, for comparison, to the middle one (which loads half the history back);
- bytes added by one fork from the middle checkpoint (target < 1 KB): the database file's
  growth over 20 forks divided by 20 (one fork alone grows the file by whole 4 KB pages or
  not at all), and the payload of the rows the first fork wrote.

Then the cost of sharing, per whole turn (turn + automatic checkpoint), measured in the same
process by running the same 300-turn sessions with and without each mechanism (alternating
runs, the fastest of the repeats per turn number, then the median):

- the version check (compare-and-set of the session's version in every write; target < 5%):
  the ``version = ?`` term of the session UPDATE each write makes, replaced by one that always
  holds for the baseline,
- the turn lease (taken before each turn and given up in the turn's commit; shown for
  information): the baseline's turns take none.

With ``--backend postgresql`` (or ``both``) the same sessions run on a PostgreSQL server
(``--url``, or a throwaway one started from Debian's binaries by
:class:`agcore_lab.testing.postgres_server.TemporaryPostgres`), each in a fresh schema, with
the same targets. Sizes there are the schema's relation sizes (``pg_total_relation_size``,
8 KB pages) and the row payloads (``pg_column_size`` of each row); a fork's cost is its rows'
payload (its relation growth is whole pages). With ``both``, the PostgreSQL / SQLite ratio of
each time is printed (information: a server round trip per statement against a file in the
same process). The cost-of-sharing section runs on SQLite.

Run: python bench/checkpoints.py [--sizes 100 500 1000] [--repeats 3]
     [--backend sqlite|postgresql|both] [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import agcore_lab.agent.session_lease as lease_module
import agcore_lab.store._sessions as sessions_sql
from agcore_lab import Agent, Message, ScriptedModel, SessionManager, SqliteStore, open_store
from agcore_lab.agent.lease import TurnLease
from agcore_lab.store.base import Store

TEXT = "The quick brown fox jumps over the lazy dog while the agent takes careful notes. "
FORKS = 20


def _text(prefix: str) -> str:
    """A deterministic text of exactly 300 characters."""
    return (prefix + " " + TEXT * 4)[:300]


def reply(messages: Sequence[Message]) -> str:
    """The scripted model's answer: 300 characters that depend on the conversation length."""
    return _text(f"reply to message {len(messages)}:")


@dataclass
class Run:
    """The figures of one session."""

    writes: list[float] = field(default_factory=list)
    bytes_per_turn: float = 0.0
    raw_per_turn: float = 0.0
    tables: dict[str, int] = field(default_factory=dict)
    list_s: float = 0.0
    rollback_s: float = 0.0
    rollback_middle_s: float = 0.0
    fork_bytes: float = 0.0
    fork_payload: int = 0


_PG_TABLES = """SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind = 'r'"""


def _pg_tables(store: Any) -> dict[str, int]:
    names = store.read_dataframe(_PG_TABLES)["relname"].tolist()
    sizes = store.read_dataframe(
        "SELECT " + ", ".join(f"pg_total_relation_size('{n}') AS {n}" for n in names)
    )
    return {name: int(sizes[name].iloc[0]) for name in names}


def _size(store: Any) -> int:
    if type(store) is not SqliteStore:
        return sum(_pg_tables(store).values())
    store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(store.path)


def _tables(store: Any) -> dict[str, int]:
    if type(store) is not SqliteStore:
        return _pg_tables(store)
    rows = store.connection.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name")
    return {name: int(size) for name, size in rows}


def _payload(store: Any) -> int:
    if type(store) is not SqliteStore:
        names = store.read_dataframe(_PG_TABLES)["relname"].tolist()
        total = store.read_dataframe(
            "SELECT "
            + " + ".join(
                f"(SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {n} t)" for n in names
            )
            + " AS payload"
        )
        return int(total["payload"].iloc[0])
    return int(store.connection.execute("SELECT sum(payload) FROM dbstat").fetchone()[0])


async def run(turns: int, db: str) -> Run:
    store: Store = open_store(db)
    manager = SessionManager(store)
    checkpointer = manager.checkpointer
    result = Run()
    sid = await manager.create(Agent(name="bench", model=ScriptedModel(reply)))
    first = len(await checkpointer.list_checkpoints(sid))
    tables_before, size_before, raw = _tables(store), _size(store), 0
    for i in range(turns):
        text = _text(f"user turn {i}:")
        start = time.perf_counter()  # the turn and its checkpoint: one commit
        done = await manager.submit_turn(sid, text)
        result.writes.append(time.perf_counter() - start)
        raw += len(text.encode()) + len(done.reply.encode())
    result.bytes_per_turn = (_size(store) - size_before) / turns
    result.raw_per_turn = raw / turns
    result.tables = {
        name: size - tables_before.get(name, 0) for name, size in _tables(store).items()
    }
    written = len(await checkpointer.list_checkpoints(sid)) - first
    assert written == turns, f"every turn must write exactly one checkpoint ({written})"

    listings = []
    for _ in range(5):
        start = time.perf_counter()
        ckpts = await checkpointer.list_checkpoints(sid)
        listings.append(time.perf_counter() - start)
    result.list_s = min(listings)
    assert len(ckpts) == turns + 1  # the "start" checkpoint and one per turn
    middle, first = ckpts[len(ckpts) // 2], ckpts[-1]

    start = time.perf_counter()
    await checkpointer.rollback(sid, first.ckpt_id)
    result.rollback_s = time.perf_counter() - start
    session = await manager.get(sid)
    assert session.turn_index == 0 and not session.messages
    start = time.perf_counter()
    await checkpointer.rollback(sid, middle.ckpt_id)  # for comparison: loads half the history
    result.rollback_middle_s = time.perf_counter() - start
    assert session.turn_index == middle.turn_index

    size, payload = _size(store), _payload(store)
    await checkpointer.fork(sid, middle.ckpt_id)
    result.fork_payload = _payload(store) - payload
    for _ in range(FORKS - 1):
        await checkpointer.fork(sid, middle.ckpt_id)
    result.fork_bytes = (_size(store) - size) / FORKS
    store.close()
    return result


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def report(turns: int, runs: list[Run], backend: str = "sqlite") -> bool:
    best = [min(column) for column in zip(*(r.writes for r in runs), strict=True)]
    early, late = statistics.median(best[10:60]), statistics.median(best[-50:])
    ratio = late / early
    per_turn = statistics.median(r.bytes_per_turn for r in runs)
    raw = runs[0].raw_per_turn
    listing = statistics.median(r.list_s for r in runs)
    rollback = statistics.median(r.rollback_s for r in runs)
    rollback_middle = statistics.median(r.rollback_middle_s for r in runs)
    # On PostgreSQL relations grow by whole 8 KB pages: a fork's cost is its rows' payload.
    fork = statistics.median(
        r.fork_bytes if backend == "sqlite" else float(r.fork_payload) for r in runs
    )
    at_scale = turns >= 1000  # the time targets are stated for 1,000 turns
    checks = [
        ratio < 1.5,
        per_turn / raw < 2,
        listing < 0.050 or not at_scale,
        rollback < 0.020 or not at_scale,
        fork < 1024,
    ]
    scale = "" if at_scale else " (target applies at 1,000 turns)"
    print(f"== {backend}: {turns} turns ({len(runs)} runs)")
    print(
        f"  checkpoint write: median turns 10-60 {early * 1e3:.3f} ms, last 50 "
        f"{late * 1e3:.3f} ms, ratio {ratio:.2f}  target < 1.5  {_verdict(checks[0])}"
    )
    print(
        f"  storage: {per_turn:.0f} B/turn for {raw:.0f} raw B/turn, ratio {per_turn / raw:.2f}"
        f"  target < 2  {_verdict(checks[1])}"
    )
    where = ", ".join(
        f"{name} {size / turns:.0f}"
        for name, size in sorted(runs[0].tables.items(), key=lambda item: -item[1])
        if size
    )
    print(f"    (B/turn by table, run 1: {where})")
    print(
        f"  list {turns + 1} checkpoints: {listing * 1e3:.1f} ms  target < 50 ms{scale}  "
        f"{_verdict(checks[2])}"
    )
    print(
        f"  rollback to the first checkpoint: {rollback * 1e3:.2f} ms  target < 20 ms{scale}  "
        f"{_verdict(checks[3])}"
    )
    print(
        f"    (rollback to the middle checkpoint, for comparison: {rollback_middle * 1e3:.2f} ms)"
    )
    if backend == "sqlite":
        print(
            f"  one fork from the middle checkpoint: {fork:.0f} B of file (mean of {FORKS} "
            f"forks), {runs[0].fork_payload} B of rows  target < 1024 B  {_verdict(checks[4])}"
        )
    else:
        print(
            f"  one fork from the middle checkpoint: {fork:.0f} B of rows (relations grew "
            f"{runs[0].fork_bytes:.0f} B per fork over {FORKS} forks, in whole pages)  "
            f"target < 1024 B  {_verdict(checks[4])}"
        )
    return all(checks)


def times(runs: list[Run]) -> dict[str, float]:
    """The medians compared across backends."""
    best = [min(column) for column in zip(*(r.writes for r in runs), strict=True)]
    return {
        "checkpoint write (median, all turns)": statistics.median(best),
        "list": statistics.median(r.list_s for r in runs),
        "rollback to the first": statistics.median(r.rollback_s for r in runs),
        "rollback to the middle": statistics.median(r.rollback_middle_s for r in runs),
    }


SHARING_TURNS = 300


async def _turn_times(db: Path) -> list[float]:
    manager = SessionManager(SqliteStore(db), watch_interval=None)
    sid = await manager.create(Agent(name="bench", model=ScriptedModel(reply)))
    times = []
    for i in range(SHARING_TURNS):
        start = time.perf_counter()
        await manager.submit_turn(sid, _text(f"user turn {i}:"))
        times.append(time.perf_counter() - start)
    return times


# The version check is the ``version = ?`` term of the session UPDATE every write makes (a
# compare-and-set; no statement of its own). Switched off, the term is one that always holds,
# with the same parameters.
_CAS_NAMES = ("_KEPT_CAS", "_KEPT_CAS_RELEASE", "_UPDATE_CAS", "_UPDATE_CAS_RELEASE")
_CHECKED = {name: getattr(sessions_sql, name) for name in _CAS_NAMES}
_UNCHECKED = {
    name: sql.replace("version = ? AND", "? IS NOT NULL AND", 1) for name, sql in _CHECKED.items()
}
assert all(_UNCHECKED[n] != _CHECKED[n] for n in _CAS_NAMES), "the CAS statements changed"


class _NoLease:
    """A turn-lease scope that takes nothing (the baseline without the lease): the turn's
    writes name a holder the store does not know, which a free lease lets through."""

    def __init__(self, store: Any, session_id: str, **kwargs: Any) -> None:
        self._store, self._session_id = store, session_id
        held = kwargs.get("held")
        self._holder = held[0] if held is not None else "bench-no-lease"

    async def __aenter__(self) -> TurnLease:
        return TurnLease(self._holder, await self._store.asession_version(self._session_id))

    async def __aexit__(self, *exc_info: object) -> None:
        return None


def _set_sharing(kind: str, real_lease: Any) -> None:
    for name in _CAS_NAMES:
        table = _UNCHECKED if kind == "no version check" else _CHECKED
        setattr(sessions_sql, name, table[name])
    lease_module.turn_lease = _NoLease if kind == "no lease" else real_lease


def sharing_cost(directory: Path, repeats: int) -> bool:
    """Median whole-turn time with and without the version check and the turn lease."""
    real_lease = lease_module.turn_lease
    kinds = ("full", "no version check", "no lease")
    times: dict[str, list[list[float]]] = {kind: [] for kind in kinds}
    for repeat in range(repeats * 2):  # more rounds: the differences are small
        for kind in kinds:
            _set_sharing(kind, real_lease)
            try:
                db = directory / f"share-{kind.replace(' ', '-')}-{repeat}.db"
                times[kind].append(asyncio.run(_turn_times(db)))
            finally:
                _set_sharing("full", real_lease)
    medians = {
        kind: statistics.median(min(column) for column in zip(*runs, strict=True))
        for kind, runs in times.items()
    }
    check = medians["full"] / medians["no version check"] - 1
    lease = medians["full"] / medians["no lease"] - 1
    print(f"== sharing, per whole turn ({SHARING_TURNS} turns, {repeats * 2} runs each)")
    print(
        f"  version check: {medians['full'] * 1e3:.3f} ms with, "
        f"{medians['no version check'] * 1e3:.3f} ms without: {check * 100:+.1f}%  "
        f"target < 5%  {_verdict(check < 0.05)}"
    )
    print(
        f"  turn lease: {medians['no lease'] * 1e3:.3f} ms without it: {lease * 100:+.1f}% "
        "(one short write per turn, the release riding in the turn's commit; information)"
    )
    return check < 0.05


@contextlib.contextmanager
def _postgres(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    from agcore_lab.testing.postgres_server import TemporaryPostgres

    with TemporaryPostgres() as started:
        yield started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="sqlite")
    parser.add_argument("--url", help="a PostgreSQL server (default: start a throwaway one)")
    args = parser.parse_args()
    if min(args.sizes) < 100:
        parser.error("sizes must be at least 100 (the windows are turns 10-60 and the last 50)")
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    started, passed = time.perf_counter(), True
    figures: dict[tuple[str, int], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        server = stack.enter_context(_postgres(args.url)) if "postgresql" in backends else ""
        for backend in backends:
            for turns in args.sizes:

                def where(repeat: int, turns: int = turns, backend: str = backend) -> str:
                    if backend == "sqlite":
                        return str(Path(tmp) / f"ckpt-{turns}-{repeat}.db")
                    return f"{server}?schema=bench_ckpt_{turns}_{repeat}_{uuid.uuid4().hex[:6]}"

                runs = [asyncio.run(run(turns, where(repeat))) for repeat in range(args.repeats)]
                passed = report(turns, runs, backend) and passed
                figures[backend, turns] = times(runs)
        if "sqlite" in backends:
            passed = sharing_cost(Path(tmp), args.repeats) and passed
    if len(backends) == 2:
        print("== PostgreSQL / SQLite time (information)")
        for turns in args.sizes:
            pg, lite = figures["postgresql", turns], figures["sqlite", turns]
            ratios = ", ".join(f"{name} {pg[name] / lite[name]:.1f}x" for name in pg)
            print(f"  {turns} turns: {ratios}")
    print(f"all targets {'PASS' if passed else 'MISS'} ({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
