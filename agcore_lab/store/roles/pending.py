"""The ``PendingStore`` role of the :class:`~agcore_lab.store.base.Store` protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pydantic import JsonValue

    from agcore_lab.store.pending import PendingToolCall

__all__ = ["PendingStore"]


@runtime_checkable
class PendingStore(Protocol):
    """Tool calls waiting for (or settled by) a person's approval.

    One role of :class:`~agcore_lab.store.base.Store`; its async twin is in
    :mod:`agcore_lab.store.aio`.
    """

    def list_pending(
        self, session_id: str | None = None, *, include_resolved: bool = False
    ) -> list[PendingToolCall]:
        """Tool calls awaiting approval (overdue ones are moved to EXPIRED first and listed as
        such); with ``include_resolved``, every call ever interrupted."""
        ...

    def get_pending(self, interrupt_id: str) -> PendingToolCall | None:
        """One pending-call record, or ``None``."""
        ...

    def decide_pending(
        self,
        *,
        session_id: str,
        run_id: str,
        interrupt_id: str,
        to_status: str,
        decision: dict[str, JsonValue] | None = None,
        result: JsonValue = None,
        from_status: str = "PENDING_APPROVAL",
        executor: str | None = None,
        lease_seconds: float | None = None,
    ) -> PendingToolCall:
        """Compare-and-set a call's status in one write transaction: exactly one of any number
        of concurrent callers wins. Moving to ``APPROVED_EXECUTING`` records ``executor`` and
        its lease (``lease_seconds`` from now).

        Raises:
            RunNotFoundError: Unknown interrupt (404).
            ConflictError: Run mismatch, or not in ``from_status`` any more (409).
            GoneError: Past its expiry; it is moved to EXPIRED first (410).
        """
        ...

    def renew_execution(self, interrupt_id: str, executor: str, *, ttl: float) -> bool:
        """Extend the executor lease of an ``APPROVED_EXECUTING`` call; ``False`` if the call
        is no longer run by ``executor``."""
        ...
