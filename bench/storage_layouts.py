"""Probe: what other table layouts would store for the same history (issue 16, storage row).

Not the store's code: three layouts of the rows one session of ``--turns`` turns writes (two
messages — a 75-character question and a 300-character reply — and one checkpoint per turn),
written into plain SQLite files in the same run, measured with ``dbstat`` against the content
bytes, each with PASS/MISS against the goal (storage / content <= 1.6):

- **today**: ``messages`` keyed by the text message id (``WITHOUT ROWID``) with the session and
  parent ids as text; ``checkpoints`` keyed by (session id, checkpoint id) with an index on the
  id, an ISO time and the JSON columns (``bench/storage.py`` measures the real store: the same
  figure within a few bytes);
- **integer keys**: rowid tables (appended in order, so pages fill), the session and parent
  pointers as integers, the text ids once each with a unique index to find them, integer
  times, the one-slot and one-model case in flat columns instead of JSON;
- **ids as integers**: as above, but the text ids themselves encoded in the integer key (the
  13 time digits of ``new_id`` in the key, the random tail in a small column), so no index on
  text is needed — ``message_id`` would be a view's column.

Run: python bench/storage_layouts.py [--turns 1000]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agcore_lab.ids import new_id

GOAL = 1.6
QUESTION = ("Question 00001: what does the quick brown fox do when the lazy dog sleeps? " * 2)[:75]
REPLY = ("reply 00002: The quick brown fox jumps over the lazy dog while the agent notes. " * 5)[
    :300
]
T0 = 1_796_123_431_723_769

TODAY = """
CREATE TABLE messages (message_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, parent_id TEXT,
    depth INTEGER, role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_name TEXT,
    created_us INTEGER NOT NULL, extra_json TEXT) WITHOUT ROWID;
CREATE TABLE checkpoints (session_id TEXT NOT NULL, ckpt_id TEXT NOT NULL, parent_ckpt_id TEXT,
    turn_index INTEGER NOT NULL, created_at TEXT NOT NULL, label TEXT, source TEXT NOT NULL,
    message_count INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL, agent_name TEXT NOT NULL,
    current_slot_id TEXT NOT NULL, last_summary_turn INTEGER, memory_version INTEGER NOT NULL,
    slots_json TEXT NOT NULL, spend_json TEXT NOT NULL, pending_json TEXT,
    PRIMARY KEY (session_id, ckpt_id)) WITHOUT ROWID;
CREATE INDEX checkpoints_ckpt_id ON checkpoints(ckpt_id)
"""

INTEGER_KEYS = """
CREATE TABLE messages (node INTEGER PRIMARY KEY, message_id TEXT NOT NULL UNIQUE,
    session INTEGER NOT NULL, parent INTEGER, depth INTEGER, role TEXT NOT NULL, content TEXT,
    tool_call_id TEXT, tool_name TEXT, created_us INTEGER NOT NULL, extra_json TEXT);
CREATE TABLE checkpoints (ckpt INTEGER PRIMARY KEY, ckpt_id TEXT NOT NULL UNIQUE,
    session INTEGER NOT NULL, parent INTEGER, turn_index INTEGER NOT NULL,
    created_us INTEGER NOT NULL, label TEXT, source TEXT NOT NULL, message_count INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL,
    agent_name TEXT NOT NULL, current_slot_id TEXT NOT NULL, last_summary_turn INTEGER,
    memory_version INTEGER NOT NULL, head INTEGER, slot_state INTEGER, model TEXT,
    requests INTEGER, slots_json TEXT, spend_json TEXT, pending_json TEXT);
CREATE INDEX checkpoints_session ON checkpoints(session, ckpt)
"""

IDS_AS_INTEGERS = INTEGER_KEYS.replace(
    "message_id TEXT NOT NULL UNIQUE", "id_tail INTEGER"
).replace("ckpt_id TEXT NOT NULL UNIQUE", "id_tail INTEGER")


def _today(conn: sqlite3.Connection, turns: int) -> None:
    session, parent, previous = new_id("ses"), None, None
    for turn in range(turns):
        for depth, (role, text) in enumerate((("user", QUESTION), ("assistant", REPLY))):
            message = new_id("msg")
            conn.execute(
                "INSERT INTO messages (message_id, session_id, parent_id, depth, role, content, "
                "created_us) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (message, session, parent, 2 * turn + depth, role, text, T0 + turn),
            )
            parent = message
        ckpt = new_id("ckpt")
        conn.execute(
            "INSERT INTO checkpoints (session_id, ckpt_id, parent_ckpt_id, turn_index, "
            "created_at, source, message_count, prompt_tokens, completion_tokens, cost_usd, "
            "agent_name, current_slot_id, memory_version, slots_json, spend_json) "
            "VALUES (?, ?, ?, ?, ?, 'auto', ?, ?, ?, 0.0, 'bench', 'main', 0, ?, ?)",
            (
                session,
                ckpt,
                previous,
                turn + 1,
                "2026-12-01T11:10:31.726397+00:00",
                2 * turn + 2,
                4820 + 50 * turn,
                790 + 10 * turn,
                f'{{"main":["{parent}","6ebd776e96edf8d4"]}}',
                f'{{"scripted":[{4820 + 50 * turn},{790 + 10 * turn},{turn},0.0]}}',
            ),
        )
        previous = ckpt


def _keyed(key: Callable[[int], int], tail: Callable[[str], object]) -> Callable[..., None]:
    def fill(conn: sqlite3.Connection, turns: int) -> None:
        parent, previous, count = None, None, 0
        for turn in range(turns):
            for depth, (role, text) in enumerate((("user", QUESTION), ("assistant", REPLY))):
                count += 1
                node = key(count)
                conn.execute(
                    "INSERT INTO messages VALUES (?, ?, 1, ?, ?, ?, ?, NULL, NULL, ?, NULL)",
                    (node, tail("msg"), parent, 2 * turn + depth, role, text, T0 + turn),
                )
                parent = node
            ckpt = key(count)
            conn.execute(
                "INSERT INTO checkpoints VALUES (?, ?, 1, ?, ?, ?, NULL, 'auto', ?, ?, ?, 0.0, "
                "'bench', 'main', NULL, 0, ?, 1, 'scripted', ?, NULL, NULL, NULL)",
                (
                    ckpt,
                    tail("ckpt"),
                    previous,
                    turn + 1,
                    T0 + turn,
                    2 * turn + 2,
                    4820 + 50 * turn,
                    790 + 10 * turn,
                    parent,
                    turn,
                ),
            )
            previous = ckpt

    return fill


def measure(directory: Path, name: str, ddl: str, fill: Callable[..., None], turns: int) -> bool:
    path = directory / f"{name.replace(' ', '-')}.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for statement in ddl.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    empty = os.path.getsize(path)
    conn.execute("BEGIN")
    fill(conn, turns)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    grown = os.path.getsize(path) - empty
    tables = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")
    where = ", ".join(f"{t} {size / turns:.0f}" for t, size in tables if size > 4096)
    conn.close()
    ratio = grown / (turns * (len(QUESTION) + len(REPLY)))
    ok = ratio <= GOAL
    print(
        f"  {name}: {grown / turns:.0f} B/turn, ratio {ratio:.2f}  goal <= {GOAL}  "
        f"{'PASS' if ok else 'MISS'}"
    )
    print(f"    (B/turn: {where})")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(16)
    print(f"== {args.turns:,} turns of {len(QUESTION)} + {len(REPLY)} characters")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        measure(directory, "today", TODAY, _today, args.turns)
        measure(directory, "integer keys", INTEGER_KEYS, _keyed(lambda n: n, new_id), args.turns)
        measure(
            directory,
            "ids as integers",
            IDS_AS_INTEGERS,
            _keyed(
                lambda n: time.time_ns() * 4 + rng.randrange(4), lambda _: rng.randrange(1 << 18)
            ),
            args.turns,
        )


if __name__ == "__main__":
    main()
