"""The store's INSERTs name their columns (a column added by a later migration, or a backend
whose table orders its columns differently, cannot shift values into the wrong column).

``_checkpoints.py``, ``_chains.py`` and ``_sessions.py`` are being rewritten with the storage
migration (m011) and are checked there.
"""

from __future__ import annotations

import re
from pathlib import Path

import agcore_lab.store as store_package
from agcore_lab.store._pg_dialect import translate

_POSITIONAL = re.compile(r"INSERT(?: OR \w+)? INTO \w+\s+VALUES", re.I)
_REWRITTEN_ELSEWHERE = {"_checkpoints.py", "_chains.py", "_sessions.py"}


def test_no_positional_insert_in_the_store() -> None:
    found = {
        path.name: _POSITIONAL.findall(path.read_text(encoding="utf-8"))
        for path in Path(store_package.__file__).parent.glob("*.py")
        if path.name not in _REWRITTEN_ELSEWHERE
    }
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_an_upsert_that_names_its_columns_updates_those_columns_on_postgresql() -> None:
    text, named = translate(
        "INSERT OR REPLACE INTO slots (session_id, slot_id, mode) VALUES (?,?,?)"
    )
    assert not named
    assert text == (
        "INSERT INTO slots (session_id, slot_id, mode) VALUES (%s,%s,%s) "
        "ON CONFLICT (session_id, slot_id) DO UPDATE SET mode = EXCLUDED.mode"
    )
