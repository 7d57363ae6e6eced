"""The scope in which a session's turn (or other leased write) runs: the store's turn lease
held, the live object rebuilt on the latest stored state.

A plain async context manager rather than a generator one: every turn enters and leaves it
once, and a generator context manager costs each turn its frames and ``asend``/``athrow``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agcore_lab.agent.lease import TurnLease, turn_lease

if TYPE_CHECKING:
    from agcore_lab.agent.lease import _TurnLeaseScope
    from agcore_lab.agent.session import AgentSession

__all__ = ["SessionLease"]


class SessionLease:
    """``async with SessionLease(session, wait):`` — the body runs holding the session's turn
    lease (``session._holder``/``session._lease`` set), on the latest stored state.

    Nested inside a turn that holds the lease already, it takes nothing and hides the outer
    lease (only its owner may release it). The caller holds the session's lock.
    """

    __slots__ = ("_outer", "_scope", "_session", "_wait")

    def __init__(self, session: AgentSession, wait: float) -> None:
        self._session, self._wait = session, wait
        self._scope: _TurnLeaseScope | None = None
        self._outer: TurnLease | None = None

    async def __aenter__(self) -> None:
        session = self._session
        session._require_attached()
        if session._holder is not None:  # nested inside a turn that holds it already
            self._outer, session._lease = session._lease, None
            return
        reserved, session._reserved = session._reserved, None
        held = (reserved[0], session.version, reserved[1]) if reserved is not None else None
        scope = turn_lease(
            session.astore,
            session.session_id,
            ttl=session.bundle.lease_seconds,
            wait=self._wait,
            held=held,
        )
        lease = await scope.__aenter__()
        self._scope = scope
        try:
            await session._areload_if_stale(lease.version)
        except BaseException as exc:
            self._scope = None
            await scope.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        session._holder, session._lease = lease.holder, lease

    async def __aexit__(self, *exc_info: object) -> None:
        session, scope = self._session, self._scope
        if scope is None:  # the nested case
            session._lease = self._outer
            return
        session._holder = session._lease = None
        await scope.__aexit__(*exc_info)
