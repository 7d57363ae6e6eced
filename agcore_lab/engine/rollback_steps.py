"""The design's four-step rollback, the checkpointer's part: ``rollback_load`` (a read) and
``apply_snapshot`` (the one write, which ``manager.replace`` makes). Mixed into
:class:`~agcore_lab.engine.checkpointer.Checkpointer`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agcore_lab.aio import run_sync
from agcore_lab.engine.snapshot import SessionSnapshot, export_snapshot
from agcore_lab.errors import InvalidInputError

if TYPE_CHECKING:
    from agcore_lab.agent.session import AgentSession
    from agcore_lab.store.aio import AsyncStore
    from agcore_lab.store.base import CkptMeta, SessionRecord

__all__ = ["RollbackSteps"]


class RollbackSteps:
    """``rollback_load`` and ``apply_snapshot`` of a checkpointer."""

    if TYPE_CHECKING:

        @property
        def _astore(self) -> AsyncStore: ...

        async def _arequire_stored(self, session_id: str) -> SessionRecord: ...

        async def get_checkpoint(self, ckpt_id: str, session_id: str | None = None) -> CkptMeta: ...

        async def _restore_live(self, session: AgentSession, target: CkptMeta) -> str: ...

    async def rollback_load(self, session_id: str, ckpt_id: str) -> SessionSnapshot:
        """The state of checkpoint ``ckpt_id`` as a :class:`SessionSnapshot` — a read only,
        nothing changes. Its ``session_version`` is the session's stored version now, so
        applying it later (``manager.replace``) refuses if the session moved on meanwhile.

        The first of the design's four steps (see the module docstring); together they give
        exactly the state of the one-call :meth:`rollback`.

        Raises:
            SessionNotFoundError: Unknown session.
            CheckpointNotFoundError: Unknown checkpoint.
            InvalidInputError: The checkpoint belongs to another session.
            CorruptRecordError: The checkpoint's row cannot be read (422).
        """
        await self._arequire_stored(session_id)
        target = await self.get_checkpoint(ckpt_id, session_id)
        snapshot = await export_snapshot(self._astore, target)
        version = await self._astore.asession_version(session_id)
        return snapshot.model_copy(update={"session_version": version})

    async def apply_snapshot(self, session: AgentSession) -> str:
        """Write the state of a session built by ``AgentSession.from_snapshot`` from a
        ``rollback_load`` snapshot: the rollback's one store transaction (slots, scalars,
        memory, pending call, a ``rollback`` checkpoint), checked against the version the
        snapshot was read at. ``manager.replace`` calls it. Returns the new checkpoint's id.

        Raises:
            InvalidInputError: The session is not built from a snapshot, or its snapshot is
                not (or no longer equals) a checkpoint of this session — import such a
                snapshot as a new session with ``import_snapshot``.
            StaleSessionError: The session changed since ``rollback_load`` (nothing written).
        """
        snapshot = session.detached
        if snapshot is None or snapshot.ckpt_id is None:
            raise InvalidInputError(
                "only a session built from a rollback_load snapshot can be applied; use "
                "import_snapshot for a snapshot from elsewhere",
                session_id=session.session_id,
            )
        target = await self.get_checkpoint(snapshot.ckpt_id, session.session_id)
        ignore = {"exported_at", "session_version"}
        exported = await export_snapshot(self._astore, target)
        expected = exported.model_dump(mode="json", exclude=ignore)
        if snapshot.model_dump(mode="json", exclude=ignore) != expected:
            raise InvalidInputError(
                f"the snapshot differs from checkpoint {target.ckpt_id!r}; import it as a new "
                "session with import_snapshot instead",
                session_id=session.session_id,
                checkpoint_id=target.ckpt_id,
            )
        return await self._restore_live(session, target)

    # -- sync twins -----------------------------------------------------------------

    def rollback_load_sync(self, session_id: str, ckpt_id: str) -> SessionSnapshot:
        """Blocking twin of :meth:`rollback_load`."""
        return run_sync(self.rollback_load(session_id, ckpt_id))

    def apply_snapshot_sync(self, session: AgentSession) -> str:
        """Blocking twin of :meth:`apply_snapshot`."""
        return run_sync(self.apply_snapshot(session))
