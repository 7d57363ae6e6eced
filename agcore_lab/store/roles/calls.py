"""The ``CallStore`` role of the :class:`~agcore_lab.store.base.Store` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from agcore_lab.llm.call_note import CallNote
    from agcore_lab.llm.call_record import ModelCall

__all__ = ["CallStore"]


@runtime_checkable
class CallStore(Protocol):
    """Model-call records: what each model request saw and answered.

    One role of :class:`~agcore_lab.store.base.Store`; its async twin is in
    :mod:`agcore_lab.store.aio`.
    """

    def insert_calls(self, calls: Sequence[ModelCall | CallNote]) -> None:
        """Store model-call records in a write of their own (calls of a failed turn, of a
        summary); ids stored already are skipped."""
        ...

    def list_calls(
        self,
        session_id: str | None = None,
        *,
        call_id: str | None = None,
        turn_index: int | None = None,
        last: int | None = None,
    ) -> list[ModelCall]:
        """Model calls of a session (or all; or one ``call_id``; or one turn), oldest first;
        only the newest ``last`` when given. Each call's request is rebuilt from the stored
        chains, and ``abandoned`` says whether a rollback left its branch.

        Checkpoint links: ``put_checkpoint`` links the session's calls not linked yet to the
        new checkpoint (``ModelCall.ckpt_id``); ``delete_checkpoints`` deletes the calls
        linked to the checkpoints it deletes; ``delete_session`` deletes all of them.
        """
        ...
