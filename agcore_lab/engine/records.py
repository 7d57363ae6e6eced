"""Records the engine hands out: tree nodes, events, previews and prune reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agcore_lab.llm.messages import Message
from agcore_lab.store.base import CkptMeta

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CheckpointPreview",
    "ManagerEvent",
    "PruneReport",
    "SessionNode",
    "SessionTree",
]

EventKind = Literal[
    "created",
    "recovered",
    "destroyed",
    "turn",
    "checkpoint",
    "rollback",
    "fork",
    "agent_switched",
    "approval",
]


class ManagerEvent(BaseModel):
    """Something changed in a :class:`~agcore_lab.engine.manager.SessionManager`.

    Listeners get these synchronously, on the thread that made the change — for ``turn`` and
    ``checkpoint``, while that session's turn lock is held: a listener must return quickly and
    never wait for that session (views only schedule a refresh).
    """

    model_config = ConfigDict(frozen=True)

    kind: EventKind
    session_id: str
    ckpt_id: str | None = None
    new_session_id: str | None = None


@dataclass
class SessionNode:
    """One session in the tree."""

    session_id: str
    agent_name: str
    parent_id: str | None
    turn_index: int
    cost_usd: float
    total_tokens: int
    created_at: datetime
    status: Literal["live", "stored"]
    orphan: bool = False
    children: list[SessionNode] = field(default_factory=list)

    def walk(self, depth: int = 0) -> list[tuple[int, SessionNode]]:
        """This node and its descendants, depth first, with their depth."""
        found = [(depth, self)]
        for child in self.children:
            found.extend(child.walk(depth + 1))
        return found


@dataclass
class SessionTree:
    """The session tree: roots (sessions without a live parent) and their descendants.

    A session whose parent was destroyed is a root marked ``orphan``.
    """

    roots: list[SessionNode]

    def walk(self) -> list[tuple[int, SessionNode]]:
        """Every node, depth first, with its depth."""
        return [item for root in self.roots for item in root.walk()]

    def find(self, session_id: str) -> SessionNode | None:
        """The node of ``session_id``, or ``None``."""
        return next((n for _, n in self.walk() if n.session_id == session_id), None)

    def __len__(self) -> int:
        return len(self.walk())

    def to_dataframe(self) -> pd.DataFrame:
        """One row per session, depth first, with its depth in the tree."""
        import pandas as pd

        columns = [
            "session_id",
            "parent_id",
            "depth",
            "agent_name",
            "turn_index",
            "total_tokens",
            "cost_usd",
            "status",
            "orphan",
            "children",
            "created_at",
        ]
        rows = [
            (
                n.session_id,
                n.parent_id,
                depth,
                n.agent_name,
                n.turn_index,
                n.total_tokens,
                n.cost_usd,
                n.status,
                n.orphan,
                len(n.children),
                n.created_at,
            )
            for depth, n in self.walk()
        ]
        return pd.DataFrame(rows, columns=columns)


class CheckpointPreview(BaseModel):
    """What a checkpoint would restore, for a view to show before a rollback or fork."""

    model_config = ConfigDict(frozen=True)

    meta: CkptMeta
    slots: dict[str, int]
    current_slot_id: str
    last_messages: list[Message]
    memory: dict[str, JsonValue]


class PruneReport(BaseModel):
    """What :meth:`Checkpointer.prune` removed and kept."""

    model_config = ConfigDict(frozen=True)

    removed: list[str] = Field(default_factory=list)
    kept_protected: list[str] = Field(default_factory=list)
    bytes_reclaimed: int = 0
