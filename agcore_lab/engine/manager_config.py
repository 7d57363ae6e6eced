"""``SessionManagerConfig``: a manager's settings as one value (the design's Phase 17 shape)."""

from __future__ import annotations

from dataclasses import dataclass

from agcore_lab.agent.bundle import RuntimeBundle

__all__ = ["SessionManagerConfig"]


@dataclass(frozen=True, kw_only=True)
class SessionManagerConfig:
    """How a :class:`~agcore_lab.engine.manager.SessionManager` runs.

    Args:
        auto_checkpoint: Write a checkpoint after every finished turn (and at creation).
        default_bundle: The services its sessions use when none is given (store, hooks,
            prices, lease time); ``None``: a bundle over the manager's store.

    Example:
        >>> from agcore_lab import SessionManager, SqliteStore
        >>> store = SqliteStore(":memory:")
        >>> manager = SessionManager(store, config=SessionManagerConfig(auto_checkpoint=False))
        >>> manager.auto_checkpoint
        False
    """

    auto_checkpoint: bool = True
    default_bundle: RuntimeBundle | None = None
