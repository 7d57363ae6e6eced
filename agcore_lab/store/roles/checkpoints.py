"""The ``CheckpointStore`` role of the :class:`~agcore_lab.store.base.Store` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from agcore_lab.store.base import CkptMeta, SessionRecord

__all__ = ["CheckpointStore"]


@runtime_checkable
class CheckpointStore(Protocol):
    """Checkpoints: the small rows time travel reads and restores.

    One role of :class:`~agcore_lab.store.base.Store`; its async twin is in
    :mod:`agcore_lab.store.aio`.
    """

    def put_checkpoint(self, ckpt: CkptMeta, *, expected_version: int | None = None) -> None:
        """Store a checkpoint (one small row, whatever the history length).

        Raises:
            StaleSessionError: ``expected_version`` is given and the session moved on.
        """
        ...

    def list_checkpoints(
        self,
        session_id: str | None = None,
        *,
        limit: int | None = None,
        before: str | int | None = None,
    ) -> list[CkptMeta]:
        """Checkpoints of a session (or of all sessions), newest first; at most ``limit``.

        ``before`` pages back: a checkpoint id (``str``) keeps only older checkpoints, a turn
        index (``int``) only those of earlier turns.

        Raises:
            InvalidInputError: ``limit`` is not an int >= 1, or ``before`` is of another type.
        """
        ...

    def get_checkpoint(self, ckpt_id: str) -> CkptMeta | None:
        """One checkpoint by id, or ``None``."""
        ...

    def latest_checkpoint_id(self, session_id: str) -> str | None:
        """The id of a session's newest checkpoint (``None``: it has none, or no such
        session) — what ``list_checkpoints(session_id, limit=1)[0].ckpt_id`` gives, without
        reading the record."""
        ...

    def delete_checkpoints(self, session_id: str, ckpt_ids: Sequence[str] | None = None) -> int:
        """Delete some (or all) of a session's checkpoints; return how many."""
        ...

    def restore_checkpoint(
        self,
        ckpt: CkptMeta,
        session: SessionRecord,
        marker: CkptMeta,
        *,
        create: bool = False,
        lease_holder: str | None = None,
    ) -> int:
        """In one transaction, make ``session`` hold the state of ``ckpt``: its record,
        exactly ``ckpt.slots``, and its memory as of ``ckpt.memory_version`` (copied from
        ``ckpt.session_id`` when that is another session). Then store ``marker`` with the
        memory version after the restore; return that version.

        ``create=True`` makes a new session (a fork) at ``session.version``; otherwise the
        stored session must be at ``session.version`` (it is then bumped by one).

        Raises:
            StaleSessionError, SessionBusyError: As for :meth:`commit`.
        """
        ...
