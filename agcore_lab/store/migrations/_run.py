"""Running a migration's SQL script inside the migration's transaction."""

from __future__ import annotations

import sqlite3

__all__ = ["run"]


def run(conn: sqlite3.Connection, script: str) -> None:
    """Each ``;``-and-newline separated statement of ``script``, in order.

    Not ``executescript()``: it commits first, and a migration must stay in its transaction.
    """
    for statement in script.split(";\n"):
        if statement.strip():
            conn.execute(statement)
