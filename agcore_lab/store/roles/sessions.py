"""The ``SessionStore`` role of the :class:`~agcore_lab.store.base.Store` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    from agcore_lab.store.base import CkptMeta, SessionRecord, SlotRecord

__all__ = ["NewSession", "SessionStore"]


class NewSession(NamedTuple):
    """One session of :meth:`SessionStore.create_sessions`: its record, its first slots and
    (optionally) its first checkpoint, as ``create_session`` takes them."""

    record: SessionRecord
    slots: Sequence[SlotRecord] = ()
    checkpoint: CkptMeta | None = None


@runtime_checkable
class SessionStore(Protocol):
    """Sessions, their versions and turn leases.

    One role of :class:`~agcore_lab.store.base.Store`; its async twin is in
    :mod:`agcore_lab.store.aio`.
    """

    def create_session(
        self,
        record: SessionRecord,
        *,
        slots: Sequence[SlotRecord] = (),
        checkpoint: CkptMeta | None = None,
    ) -> None:
        """Insert a new session and its first slots, in one transaction. Raises
        ``ConflictError`` if the id exists. ``checkpoint``: the session's first checkpoint,
        stored in the same transaction."""
        ...

    def create_sessions(
        self, sessions: Sequence[NewSession], *, lease_holder: str | None = None, ttl: float = 0.0
    ) -> None:
        """Insert many new sessions, each as ``create_session`` would, in one transaction.

        ``lease_holder``: take every new session's turn lease for ``lease_holder`` for ``ttl``
        seconds in the same write (its first turn then starts without a write of its own).

        Raises:
            ConflictError: An id exists or is given twice; nothing is written.
        """
        ...

    def get_session(self, session_id: str) -> SessionRecord | None:
        """The session's record, or ``None``."""
        ...

    def list_sessions(self) -> list[SessionRecord]:
        """All sessions, oldest first."""
        ...

    def child_ids(self, session_id: str) -> list[str]:
        """Ids of the sessions whose parent is ``session_id``, oldest first (an indexed read;
        an unknown id has none)."""
        ...

    def delete_session(self, session_id: str, *, expected_version: int | None = None) -> bool:
        """Remove a session with its messages, links, slots and memory; ``False`` if absent.

        Raises:
            StaleSessionError: ``expected_version`` is given and the store holds another.
            SessionBusyError: Another writer's turn lease is live.
        """
        ...

    def session_version(self, session_id: str) -> int | None:
        """The stored version of a session, or ``None`` (a single indexed read)."""
        ...

    def acquire_lease(self, session_id: str, holder: str, *, ttl: float) -> int:
        """Take the session's turn lease for ``holder`` for ``ttl`` seconds (or renew it);
        return the stored version.

        Raises:
            SessionBusyError: Another holder's lease is live.
            SessionNotFoundError: No such session.
        """
        ...

    def renew_lease(self, session_id: str, holder: str, *, ttl: float) -> bool:
        """Extend ``holder``'s lease; ``False`` if it does not hold it any more."""
        ...

    def release_lease(self, session_id: str, holder: str) -> None:
        """Give the lease up (no-op if ``holder`` does not hold it)."""
        ...
