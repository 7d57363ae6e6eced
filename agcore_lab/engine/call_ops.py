"""The model-call methods of :class:`~agcore_lab.engine.manager.SessionManager` (a mixin).

Each delegates to :mod:`agcore_lab.engine.calls`; the async ones have ``*_sync`` twins.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agcore_lab.aio import run_sync
from agcore_lab.engine import calls as _calls
from agcore_lab.llm.call_record import ModelCall

if TYPE_CHECKING:
    import pandas as pd

    from agcore_lab.agent.bundle import RuntimeBundle
    from agcore_lab.store.base import Store

__all__ = ["CallOperations"]


class CallOperations:
    """Reading the model-call log: ``model_calls``, ``model_calls_frame``, ``export_calls``."""

    if TYPE_CHECKING:
        bundle: RuntimeBundle

        @property
        def store(self) -> Store: ...

    @property
    def record_calls(self) -> bool:
        """Whether sessions of this manager record their model calls (on by default); set it
        to ``False`` to stop recording (``Agent(record_calls=False)`` does it per agent)."""
        return self.bundle.record_calls

    @record_calls.setter
    def record_calls(self, value: bool) -> None:
        self.bundle.record_calls = bool(value)

    async def model_calls(
        self,
        session_id: str | None = None,
        *,
        turn_index: int | None = None,
        last: int | None = None,
    ) -> list[ModelCall]:
        """Every model request of a session (or of all sessions), oldest first.

        Args:
            session_id: One session; ``None`` for all.
            turn_index: Only the calls of that turn.
            last: Only the newest ``last`` calls.

        Raises:
            SessionNotFoundError: Unknown session.
            InvalidInputError: ``last`` is not a positive integer.

        Example:
            >>> calls = await manager.model_calls(sid)       # doctest: +SKIP
            >>> calls[0].request_messages[0].role            # doctest: +SKIP
            'system'
        """
        return _calls.list_calls(self.store, session_id, turn_index=turn_index, last=last)

    async def get_call(self, call_id: str) -> ModelCall:
        """One model call by id; raises ``CallNotFoundError`` (404) if there is none."""
        return _calls.get_call(self.store, call_id)

    def model_calls_frame(self, session_id: str | None = None) -> pd.DataFrame:
        """The model calls as a DataFrame, one row per call, flat columns (see
        :data:`agcore_lab.engine.calls.FRAME_COLUMNS`)."""
        return _calls.calls_frame(self.store, session_id)

    async def export_calls(self, path: str | Path, session_id: str | None = None) -> int:
        """Write the calls to ``path`` as JSON lines (for ``ReplayModel(path)``); return how
        many."""
        return _calls.export_calls(self.store, path, session_id)

    def model_calls_sync(
        self,
        session_id: str | None = None,
        *,
        turn_index: int | None = None,
        last: int | None = None,
    ) -> list[ModelCall]:
        """Blocking twin of :meth:`model_calls`."""
        return run_sync(self.model_calls(session_id, turn_index=turn_index, last=last))

    def get_call_sync(self, call_id: str) -> ModelCall:
        """Blocking twin of :meth:`get_call`."""
        return run_sync(self.get_call(call_id))

    def export_calls_sync(self, path: str | Path, session_id: str | None = None) -> int:
        """Blocking twin of :meth:`export_calls`."""
        return run_sync(self.export_calls(path, session_id))
