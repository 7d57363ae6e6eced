"""Fixtures for the engine tests: managers on a file store, agents, and a state probe."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    ModelPrice,
    PriceTable,
    RuntimeBundle,
    ScriptedModel,
    SessionManager,
    SqliteStore,
)

# Non-zero prices, so cost is part of every state comparison.
PRICES = PriceTable(
    {
        "scripted": ModelPrice(prompt=1.0, completion=2.0),
        "other": ModelPrice(prompt=3.0, completion=5.0),
    }
)

MakeManager = Callable[..., SessionManager]
State = Callable[[AgentSession], dict[str, Any]]
TABLES = ("sessions", "messages", "message_links", "slots", "memory_log", "checkpoints")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "lab.db"


@pytest.fixture
def make_manager(db: Path) -> Iterator[MakeManager]:
    """``make_manager(**kwargs)``: a new manager (and connection) on the same database file,
    as after a kernel restart; the writer agent is registered."""
    stores: list[SqliteStore] = []

    def make(**kwargs: Any) -> SessionManager:
        store = SqliteStore(db)
        stores.append(store)
        kwargs.setdefault("agents", [Agent(name="writer", model=ScriptedModel())])
        return SessionManager(bundle=RuntimeBundle(store=store, prices=PRICES), **kwargs)

    yield make
    for store in stores:
        store.close()


@pytest.fixture
def manager(make_manager: MakeManager) -> SessionManager:
    return make_manager()


@pytest.fixture
def agent() -> Agent:
    return Agent(name="writer", model=ScriptedModel())


def capture(session: AgentSession) -> dict[str, Any]:
    """Everything a rollback must restore, in comparable form."""
    return {
        "turn_index": session.turn_index,
        "current_slot_id": session.current_slot_id,
        "last_summary_turn": session.last_summary_turn,
        "cost": session.cost_so_far,
        "spend": {m: s.model_dump() for m, s in session.cost_tracker.by_model.items()},
        "slots": {
            slot_id: {
                "messages": [(m.id, m.role, m.text) for m in slot.messages],
                "mode": slot.mode.value,
                "summary_override": slot.summary_override,
                "pinned_ids": list(slot.pinned_ids),
                "recent_window": slot.recent_window,
                "parent_slot_id": slot.parent_slot_id,
                "fork_point": slot.fork_point,
                "merge_base": slot.merge_base,
            }
            for slot_id, slot in session.slots.items()
        },
        "memory": session.session_memory.to_dict(),
    }


@pytest.fixture
def state() -> State:
    return capture


@pytest.fixture
def counts() -> Callable[[SessionManager], dict[str, int]]:
    """Row counts of every engine table (to prove that nothing was written)."""

    def count(manager: SessionManager) -> dict[str, int]:
        conn = manager.store.connection  # type: ignore[attr-defined]
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}

    return count
