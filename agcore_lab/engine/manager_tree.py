"""The session tree of a :class:`~agcore_lab.engine.manager.SessionManager`: refresh, children,
parent, the tree and the sessions table (a mixin; they are the manager's methods)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agcore_lab.aio import run_sync
from agcore_lab.engine.records import SessionTree

if TYPE_CHECKING:
    import pandas as pd

    from agcore_lab.agent.session import AgentSession
    from agcore_lab.store.aio import AsyncStore
    from agcore_lab.store.base import SessionRecord, Store

__all__ = ["TreeOperations"]


class TreeOperations:
    """The manager's view of the session tree (mixed into ``SessionManager``)."""

    if TYPE_CHECKING:

        @property
        def store(self) -> Store: ...

        @property
        def astore(self) -> AsyncStore: ...

        def live(self, session_id: str) -> AgentSession | None: ...

        def live_ids(self) -> list[str]: ...

        async def arequire_stored(self, session_id: str) -> SessionRecord: ...

        async def recover(self, session_id: str) -> AgentSession: ...

    async def refresh(self, session_id: str) -> bool:
        """Reload the live session from the store if another writer moved it on (see
        :meth:`AgentSession.refresh`); a session not live here is recovered. Returns whether
        anything was reloaded."""
        session = self.live(session_id)
        if session is None:
            await self.recover(session_id)
            return True
        return await session.refresh()

    async def children(self, parent_id: str) -> list[str]:
        """Ids of the sessions whose parent is ``parent_id``, oldest first."""
        await self.arequire_stored(parent_id)
        return await self.astore.achild_ids(parent_id)

    async def parent(self, child_id: str) -> str | None:
        """The parent's id; ``None`` for a root, or when the parent was destroyed."""
        record = await self.arequire_stored(child_id)
        if record.parent_id is None or await self.astore.aget_session(record.parent_id) is None:
            return None
        return record.parent_id

    async def tree(self, root_id: str | None = None) -> SessionTree:
        """The session tree (all roots, or the subtree under ``root_id``).

        Raises:
            SessionNotFoundError: ``root_id`` is not in the store.
        """
        sessions = await self.astore.alist_sessions()
        return SessionTree.build(sessions, set(self.live_ids()), root_id)

    def sessions_dataframe(self) -> pd.DataFrame:
        """One row per stored session (the ``sessions`` table, plus a ``live`` column)."""
        frame: pd.DataFrame = self.store.read_dataframe(
            "SELECT session_id, parent_id, agent_name, turn_index, current_slot_id, "
            "prompt_tokens, completion_tokens, cost_usd, created_at, updated_at "
            "FROM sessions ORDER BY created_at"
        )
        frame["live"] = frame["session_id"].isin(self.live_ids())
        return frame

    # -- sync twins -------------------------------------------------------------------------

    def refresh_sync(self, session_id: str) -> bool:
        """Blocking twin of :meth:`refresh`."""
        return run_sync(self.refresh(session_id))

    def children_sync(self, parent_id: str) -> list[str]:
        """Blocking twin of :meth:`children`."""
        return run_sync(self.children(parent_id))

    def parent_sync(self, child_id: str) -> str | None:
        """Blocking twin of :meth:`parent`."""
        return run_sync(self.parent(child_id))

    def tree_sync(self, root_id: str | None = None) -> SessionTree:
        """Blocking twin of :meth:`tree`."""
        return run_sync(self.tree(root_id))
