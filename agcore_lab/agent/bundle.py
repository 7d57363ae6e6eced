"""``RuntimeBundle``: the services a session and its child sessions share."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.call_record import ModelCall
from agcore_lab.llm.usage import DEFAULT_PRICES, PriceTable
from agcore_lab.store.aio import AsyncStore
from agcore_lab.store.base import Store
from agcore_lab.store.threaded import as_async

if TYPE_CHECKING:
    from agcore_lab.agent.events import TurnResult
    from agcore_lab.agent.session import AgentSession

__all__ = ["RuntimeBundle", "TurnHook"]

TurnHook: TypeAlias = Callable[["AgentSession", "TurnResult"], Awaitable[None] | None]


def _default_store() -> Store:
    from agcore_lab.store.sqlite import SqliteStore

    return SqliteStore(":memory:")


@dataclass(kw_only=True)
class RuntimeBundle:
    """Services shared by a session and its child sessions.

    Args:
        store: Where sessions are kept; an in-memory SQLite store by default.
        hooks: Turn-end hooks ``hook(session, result)``, sync or async, run after every turn
            of every session using this bundle (after the turn was committed). A hook that
            raises is logged; the turn still succeeds.
        prices: The price table for cost tracking.
        record_calls: Record every model request of these sessions (on by default).
        call_redactor: Sees every model-call record before it is kept; returns the record to
            keep (e.g. with tool results blanked, see
            :func:`~agcore_lab.agent.recording.redact_tool_results`) or ``None`` to drop it.
        call_listeners: Called with each model-call record as soon as the call ends (live
            views, telemetry); a listener that raises is logged and skipped.
        lease_seconds: Lifetime of the leases a turn holds in the store (the session's turn
            lease, and the executor lease of an approved tool call). They are renewed every
            third of it while the work runs; a crashed holder's lease runs out after at most
            this long, and only then may another writer go on (or a person settle the call).

    The engine awaits :attr:`astore`, the async seam over ``store``
    (:func:`~agcore_lab.store.threaded.as_async`); ``store`` stays the sync store you passed.
    """

    store: Store = field(default_factory=_default_store)
    hooks: list[TurnHook] = field(default_factory=list)
    prices: PriceTable = field(default_factory=lambda: DEFAULT_PRICES.model_copy(deep=True))
    record_calls: bool = True
    call_redactor: Callable[[ModelCall], ModelCall | None] | None = None
    call_listeners: list[Callable[[ModelCall], None]] = field(default_factory=list)
    lease_seconds: float = 10.0
    _astore: AsyncStore | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def astore(self) -> AsyncStore:
        """The :class:`~agcore_lab.store.aio.AsyncStore` the engine awaits: ``store`` behind
        :func:`~agcore_lab.store.threaded.as_async` (built once; again if ``store`` is
        replaced)."""
        astore = self._astore
        if astore is None or astore.sync_store is not self.store:
            astore = self._astore = as_async(self.store)
        return astore

    def __post_init__(self) -> None:
        if not (
            isinstance(self.lease_seconds, int | float)
            and math.isfinite(self.lease_seconds)
            and 0.1 <= self.lease_seconds <= 86_400
        ):
            raise InvalidInputError(
                f"lease_seconds must be between 0.1 and 86400 seconds, got {self.lease_seconds!r}"
            )
