"""The ``FrameReader`` role of the :class:`~agcore_lab.store.base.Store` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FrameReader"]


@runtime_checkable
class FrameReader(Protocol):
    """Read-only SQL over the store's flat tables, straight into pandas.

    The tables (``sessions``, ``checkpoints``, ``model_calls`` …) are plain and pandas-friendly
    (see docs/storage.md), so the engine builds its DataFrames (``to_dataframe``,
    ``sessions_dataframe``) with one query rather than from records. Parameters use ``?``
    placeholders on every backend.

    One role of :class:`~agcore_lab.store.base.Store`; its async twin is in
    :mod:`agcore_lab.store.aio`.
    """

    def read_dataframe(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        """Run a read-only query and return a pandas DataFrame (one consistent snapshot).

        Raises:
            StorageError: The query failed.
        """
        ...
