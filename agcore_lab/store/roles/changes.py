"""The ``ChangeFeed`` role of the :class:`~agcore_lab.store.base.Store` protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from agcore_lab.store.base import ChangeRecord

__all__ = ["ChangeFeed"]


@runtime_checkable
class ChangeFeed(Protocol):
    """The change feed: how one store object learns what others committed.

    One role of :class:`~agcore_lab.store.base.Store`; its async twin is in
    :mod:`agcore_lab.store.aio`.
    """

    @property
    def origin(self) -> str:
        """A token naming this store object in the change feed."""
        ...

    def watch_token(self) -> int:
        """A cheap counter that changes when another connection or process committed."""
        ...

    def changes_since(self, seq: int) -> list[ChangeRecord]:
        """Change-feed entries after ``seq``, oldest first (the feed keeps recent ones)."""
        ...

    def latest_change(self) -> int:
        """The newest ``seq`` of the change feed (0 when empty)."""
        ...
