"""Reading a session's checkpoints for the timeline, incrementally.

``store.list_checkpoints`` of a 10,000-checkpoint session takes seconds (every row is
validated), and a timeline reloads after every turn. Checkpoints are never changed once
written — only added, or deleted (prune, destroy) — so the reader keeps the list and, on a
reload, reads only the newest ones (``limit=n``, growing ``n`` until it reaches one it
has), then checks the total against a ``count(*)``; any difference (a prune) means one full
read. Stores without ``read_dataframe`` (no count) are read in full every time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agcore_lab.engine.manager import SessionManager

__all__ = ["CheckpointReader"]

FIRST_WINDOW = 64


class CheckpointReader:
    """A session's checkpoints, newest first, read again only where they changed.

    Example:
        >>> from agcore_lab import Agent, ScriptedModel, SessionManager
        >>> from agcore_lab.aio import run_sync
        >>> manager = SessionManager()
        >>> sid = manager.create_sync(Agent(name="w", model=ScriptedModel()))
        >>> reader = CheckpointReader(manager, sid)
        >>> len(run_sync(reader.read())), reader.full_reads
        (1, 1)
        >>> _ = manager.submit_turn_sync(sid, "hi")
        >>> len(run_sync(reader.read())), reader.full_reads
        (2, 1)
    """

    def __init__(self, manager: SessionManager, session_id: str) -> None:
        self.manager = manager
        self.session_id = session_id
        self.full_reads = 0
        self._kept: list[Any] | None = None  # CkptMeta, newest first
        if getattr(manager.store, "read_dataframe", None) is not None:
            # read_dataframe imports pandas on first use: do it here, on the caller's thread,
            # not inside a load on the background loop the turns share (~0.5 s, once).
            import pandas  # noqa: F401

    def forget(self) -> None:
        """Read everything again next time."""
        self._kept = None

    async def read(self) -> list[Any]:
        """The session's checkpoints, newest first (raises as ``list_checkpoints`` does)."""
        kept = self._kept
        if kept is None or getattr(self.manager.store, "read_dataframe", None) is None:
            return await self._full()  # without a count, a prune could not be told
        store = self.manager.store
        known = {c.ckpt_id for c in kept}
        want = FIRST_WINDOW
        while True:
            newest = store.list_checkpoints(self.session_id, limit=want)
            if len(newest) < want or newest[-1].ckpt_id in known:
                break
            want *= 4
        if len(newest) < want:
            merged = newest  # the window holds them all
        else:
            oldest = newest[-1].ckpt_id
            merged = newest + [c for c in kept if c.ckpt_id < oldest]
        total = self._count()
        if total is not None and total != len(merged):
            return await self._full()  # some were deleted
        self._kept = merged
        return list(merged)

    async def _full(self) -> list[Any]:
        checkpoints = await self.manager.checkpointer.list_checkpoints(self.session_id)
        self.full_reads += 1
        self._kept = checkpoints
        return list(checkpoints)

    def _count(self) -> int | None:
        read = getattr(self.manager.store, "read_dataframe", None)
        if read is None:
            return None
        frame = read(
            "SELECT count(*) AS n FROM checkpoints WHERE session_id = ?", [self.session_id]
        )
        return int(frame["n"].iloc[0])
