"""Records the engine hands out: tree nodes, events, previews and prune reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agcore_lab.errors import SessionNotFoundError
from agcore_lab.llm.messages import Message
from agcore_lab.store.base import CkptMeta, SessionRecord

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
    "slot",
    "missed",
]


class ManagerEvent(BaseModel):
    """Something changed in a :class:`~agcore_lab.engine.manager.SessionManager`.

    Listeners get these synchronously, on the thread that made the change — for ``turn`` and
    ``checkpoint``, while that session's turn lock is held: a listener must return quickly and
    never wait for that session (views only schedule a refresh). Changes made by *other*
    processes (or other store objects) arrive the same way from the manager's watcher thread,
    with ``remote=True``.

    ``missed`` (``remote=True``, ``session_id=""``: no one session) says the watcher fell
    further behind the store's change feed than the feed keeps (a suspended kernel, another
    process writing hundreds of changes between two looks): some changes made elsewhere
    reached no listener, so whatever a listener shows may be stale — read it again. Live
    sessions were re-read first, each with a ``turn`` event (``destroyed`` if it is gone).
    """

    model_config = ConfigDict(frozen=True)

    kind: EventKind
    session_id: str
    ckpt_id: str | None = None
    new_session_id: str | None = None
    remote: bool = False


@dataclass
class SessionNode:
    """One session in the tree.

    ``updated_at`` is when the session's stored row was last written (a turn, a rollback, an
    agent switch, a metadata write — every state-changing commit stamps it).
    """

    session_id: str
    agent_name: str
    parent_id: str | None
    turn_index: int
    cost_usd: float
    total_tokens: int
    created_at: datetime
    updated_at: datetime
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

    @classmethod
    def build(
        cls, records: list[SessionRecord], live: set[str], root_id: str | None = None
    ) -> SessionTree:
        """The tree of stored sessions (``live``: ids held by a manager), or the subtree
        under ``root_id``.

        Raises:
            SessionNotFoundError: ``root_id`` is not among the records.
        """
        known = {r.session_id for r in records}
        nodes = {
            r.session_id: SessionNode(
                session_id=r.session_id,
                agent_name=r.agent_name,
                parent_id=r.parent_id,
                turn_index=r.turn_index,
                cost_usd=r.cost_usd,
                total_tokens=r.prompt_tokens + r.completion_tokens,
                created_at=r.created_at,
                updated_at=r.updated_at,
                status="live" if r.session_id in live else "stored",
                orphan=r.parent_id is not None and r.parent_id not in known,
            )
            for r in records
        }
        roots = []
        for node in nodes.values():
            if node.parent_id in nodes:
                nodes[node.parent_id].children.append(node)
            else:
                roots.append(node)
        if root_id is not None:
            if root_id not in nodes:
                raise SessionNotFoundError("no such session in the store", session_id=root_id)
            roots = [nodes[root_id]]
        return cls(roots=roots)

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
            "updated_at",
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
                n.updated_at,
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
