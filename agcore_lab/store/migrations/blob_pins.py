"""Schema 13 (issue 15, recording under 5% of a turn): a session pins the call blobs it wrote.

A turn's commit used to ask ``PRAGMA data_version`` before writing its calls: a blob this
connection knew to be stored for a session (the tools, the system prompt) could have been
removed by another process meanwhile (it prunes the session's calls, then deletes a session
and with it the blobs no call uses). ``call_blob_pins`` closes that gap instead: every blob
written with a session's calls is pinned to that session in the same write, and the blob
clean-up spares pinned blobs, so a blob pinned to a session stays until that session is
deleted (and a deleted session takes no more commits). A connection then knows its blobs for
as long as the session lives: no read per commit (see
:class:`~agcore_lab.store._call_blobs.Interned`).

The conversion adds the table only: blobs stored before stay as they were (the first commit
of each session on a connection writes, and pins, the blobs it uses).
"""

from __future__ import annotations

import sqlite3

from agcore_lab.store.migrations._run import run as _run

__all__ = ["m013_blob_pins"]

_M013_PINS = """CREATE TABLE call_blob_pins (
    session_id TEXT NOT NULL,
    hash       TEXT NOT NULL,
    PRIMARY KEY (session_id, hash)
) WITHOUT ROWID"""


def m013_blob_pins(conn: sqlite3.Connection) -> None:
    """Schema 13: the ``call_blob_pins`` table (see the module docstring)."""
    _run(conn, _M013_PINS)
