"""Errors raised by agcore_lab.

Every error derives from :class:`AgcoreError`, carries the context it was raised in, and says
what to do next. Errors a web service would map to an HTTP status expose ``to_problem()``, an
RFC 7807 problem-details dict.

The tree (every class below lives in this module; a test walks every subclass)::

    AgcoreError
    ├── UserError                      a usage mistake by the application developer
    │   ├── InvalidInputError (ValueError)        bad argument or value
    │   ├── ConfigurationError                    inconsistent settings
    │   └── AsyncBridgeError (RuntimeError)       a *_sync twin called from the bridge's own loop
    ├── ProblemError                   has an HTTP meaning and ``to_problem()``
    │   ├── NotFoundError (KeyError)   404: session, slot, run, checkpoint, agent, entity
    │   │   ├── SessionNotFoundError
    │   │   ├── SlotNotFoundError
    │   │   ├── AgentNotFoundError     no agent of that name registered with the manager
    │   │   ├── CheckpointNotFoundError
    │   │   ├── RunNotFoundError       no such interrupted run or interrupt
    │   │   ├── CallNotFoundError      no model call with that id
    │   │   └── EntityNotFoundError    no such entity in a knowledge graph
    │   ├── ConflictError              409: run/interrupt mismatch, already resolved
    │   │   ├── StaleSessionError      a write based on an older version of the session
    │   │   └── SessionBusyError       another writer holds the session's turn lease
    │   ├── GoneError                  410: expired
    │   └── UnprocessableError         422: invalid or wrong-version snapshot
    │       └── StoredStateError       a stored record that no longer validates
    ├── AgentRunError                  a turn could not finish
    │   ├── MaxToolRoundsError         the model kept calling tools past ``max_tool_rounds``
    │   └── SubTaskError               a dispatched sub-agent task did not complete
    ├── ModelError                     the model backend failed
    │   ├── ModelHTTPError             non-2xx answer (status and body excerpt)
    │   ├── ModelTimeoutError          no answer in time
    │   ├── ModelConnectionError       could not connect
    │   ├── ReplayMissError            a ReplayModel has no recording of the request
    │   └── ModelProtocolError         an answer that breaks the wire format
    └── StorageError                   the store failed (driver errors wrapped, never leaked)
        └── CorruptRecordError (also UnprocessableError, 422)  a stored row that cannot be read

Bad input is always refused before anything is stored. Misuse of settings that cannot work
together (``store=`` and a ``bundle=`` with another store) is a :class:`ConfigurationError`
everywhere.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

__all__ = [
    "AgcoreError",
    "AgentNotFoundError",
    "AgentRunError",
    "AsyncBridgeError",
    "CallNotFoundError",
    "CheckpointNotFoundError",
    "ConfigurationError",
    "ConflictError",
    "CorruptRecordError",
    "EntityNotFoundError",
    "GoneError",
    "InvalidInputError",
    "MaxToolRoundsError",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelProtocolError",
    "ModelTimeoutError",
    "NotFoundError",
    "ProblemError",
    "ReplayMissError",
    "RunNotFoundError",
    "SessionBusyError",
    "SessionNotFoundError",
    "SlotNotFoundError",
    "StaleSessionError",
    "StorageError",
    "StoredStateError",
    "SubTaskError",
    "UnprocessableError",
    "UserError",
]


class AgcoreError(Exception):
    """Root of every error agcore_lab raises.

    Keyword arguments given to the constructor are kept in ``context`` and shown in ``str()``,
    so an error always names the session, slot or checkpoint it is about.
    """

    hint: ClassVar[str] = ""
    """What to do next, added to the message when the message does not say it already."""

    def __init__(self, message: str, **context: Any) -> None:
        if self.hint and self.hint not in message:
            message = f"{message}; {self.hint}"
        super().__init__(message)
        self.message = message
        self.context: dict[str, Any] = {k: v for k, v in context.items() if v is not None}
        for key, value in self.context.items():
            setattr(self, key, value)

    def __str__(self) -> str:
        if not self.context:
            return self.message
        details = ", ".join(f"{k}={v!r}" for k, v in self.context.items())
        return f"{self.message} ({details})"


class UserError(AgcoreError):
    """A usage mistake by the application developer: fix the call, then try again."""


class InvalidInputError(UserError, ValueError):
    """An argument or value is not acceptable; the message says which and why.

    Attributes:
        errors: For a refused pydantic model, pydantic's list of problems (else empty).
    """

    errors: list[Any]

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message, **context)
        self.errors = []


class ConfigurationError(UserError):
    """Settings that cannot work together."""


class AsyncBridgeError(UserError, RuntimeError):
    """A ``*_sync`` method was called from the bridge's own event-loop thread.

    Inside a coroutine or a callback running on that loop, ``await`` the async method instead.
    """


class ProblemError(AgcoreError):
    """An error with an HTTP meaning; ``to_problem()`` gives RFC 7807 problem details."""

    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal error"
    slug: ClassVar[str] = "internal-error"

    def to_problem(self, instance: str | None = None) -> dict[str, Any]:
        """Return the RFC 7807 problem-details object for this error.

        Args:
            instance: A URI naming this occurrence; defaults to the first id in the context.
        """
        if instance is None:
            ids = [str(v) for k, v in self.context.items() if k.endswith("_id")]
            instance = ids[0] if ids else None
        problem: dict[str, Any] = {
            "type": f"https://agcore-lab.dev/problems/{self.slug}",
            "title": self.title,
            "status": self.status,
            "detail": str(self),
        }
        if instance is not None:
            problem["instance"] = instance
        return problem


class NotFoundError(ProblemError, KeyError):
    """404: the thing named does not exist (or no longer does)."""

    status = 404
    title = "Not found"
    slug = "not-found"

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return AgcoreError.__str__(self)


class CallNotFoundError(NotFoundError):
    """404: no model call with that id in the store."""


class SessionNotFoundError(NotFoundError):
    """404: no session with that id in this manager or store."""

    hint = (
        "check the id against store.list_sessions() (or manager.tree_sync()), or create the "
        "session first with SessionManager.create / AgentSession(...)"
    )


class SlotNotFoundError(NotFoundError):
    """404: no context slot with that id in the session."""


class AgentNotFoundError(NotFoundError):
    """404: no agent of that name is registered with the manager."""


class CheckpointNotFoundError(NotFoundError):
    """404: no such checkpoint (in that session)."""


class RunNotFoundError(NotFoundError):
    """404: no such interrupted run or interrupt (in that session)."""


class EntityNotFoundError(NotFoundError):
    """404: no entity with that id in the graph; ``entity_id`` names it."""


class ConflictError(ProblemError):
    """409: the request conflicts with the current state (already resolved, wrong run)."""

    status = 409
    title = "Conflict"
    slug = "conflict"


class StaleSessionError(ConflictError):
    """409: the write was based on an older version of the session than the store holds.

    Another writer (a task, thread, kernel or machine) changed the session in between; this
    write stored nothing. Call ``session.refresh()`` (or ``manager.refresh(session_id)``) to
    load the stored state, then try again.

    Attributes:
        session_id: The session.
        expected_version: The version the write was based on.
        stored_version: The version the store holds (``None``: the session is gone).
    """

    title = "Stale session"
    slug = "stale-session"

    def __init__(
        self,
        message: str,
        *,
        session_id: str,
        expected_version: int,
        stored_version: int | None,
        **context: Any,
    ) -> None:
        super().__init__(
            message,
            session_id=session_id,
            expected_version=expected_version,
            stored_version=stored_version,
            **context,
        )

    def to_problem(self, instance: str | None = None) -> dict[str, Any]:
        """Problem details with the session and both versions as extension members."""
        problem = super().to_problem(instance)
        problem.update(
            session_id=self.context["session_id"],
            expected_version=self.context["expected_version"],
            stored_version=self.context.get("stored_version"),
        )
        return problem


class SessionBusyError(ConflictError):
    """409: another writer holds the session's turn lease; nothing of this call ran.

    A turn takes the lease before it calls the model, so a second simultaneous writer is
    stopped before any tool runs. Wait for the other turn (``submit_turn(..., wait=seconds)``)
    or try again later. A crashed holder's lease runs out by itself.

    Attributes:
        session_id: The session.
        holder: Who holds the lease (``host:pid:token``).
        lease_expires_at: When the lease runs out unless renewed (UTC).
    """

    title = "Session busy"
    slug = "session-busy"


class GoneError(ProblemError):
    """410: the thing existed but has expired."""

    status = 410
    title = "Gone"
    slug = "gone"


class UnprocessableError(ProblemError):
    """422: well-formed but unusable input, such as a snapshot of the wrong version."""

    status = 422
    title = "Unprocessable entity"
    slug = "unprocessable-entity"


class StoredStateError(UnprocessableError):
    """422: a stored record (a pending call, a checkpoint) no longer validates.

    The store was edited by hand or by an incompatible version; nothing was changed by the
    request that found it. Repair or remove the record, or roll back to an earlier checkpoint.
    """

    slug = "invalid-stored-state"


class AgentRunError(AgcoreError):
    """A turn could not finish."""


class MaxToolRoundsError(AgentRunError):
    """The model kept calling tools past ``Agent.max_tool_rounds``.

    The messages of the turn so far are kept in the session; ``partial`` holds the turn result
    up to the point where it stopped.
    """

    def __init__(self, message: str, *, partial: Any = None, **context: Any) -> None:
        super().__init__(message, **context)
        self.partial = partial


class SubTaskError(AgentRunError):
    """A dispatched task that did not complete; it keeps its place in ``dispatch_all``'s list.

    Attributes:
        child_id: The child session (``None`` if it was never created).
        task: The task text.
        status: ``failed``, ``timed_out`` or ``cancelled``.
        error: The underlying exception, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        child_id: str | None,
        task: str,
        status: Literal["failed", "timed_out", "cancelled"],
        error: BaseException | None = None,
    ) -> None:
        super().__init__(message, child_id=child_id, status=status)
        self.child_id = child_id
        self.task = task
        self.status = status
        self.error = error


class ModelError(AgcoreError):
    """The model backend failed."""


class ModelHTTPError(ModelError):
    """The model endpoint answered with a non-success status.

    Attributes:
        status_code: The HTTP status.
        body: The first 500 characters of the response body.
    """

    def __init__(self, message: str, *, status_code: int, body: str, **context: Any) -> None:
        super().__init__(message, status_code=status_code, body=body[:500], **context)
        self.status_code = status_code
        self.body = body[:500]


class ReplayMissError(ModelError):
    """A request that no recorded call answers (a strict ``ReplayModel``).

    Attributes:
        index: The position of the first message that differs from the closest recording
            (or the request's length when it only adds messages, or differs in its tools).
    """


class ModelTimeoutError(ModelError):
    """The model endpoint did not answer in time."""


class ModelConnectionError(ModelError):
    """The model endpoint could not be reached."""


class ModelProtocolError(ModelError):
    """The model endpoint answered with something that breaks the wire format."""


class StorageError(AgcoreError):
    """The store failed; the underlying driver error is the ``__cause__``."""


class CorruptRecordError(StorageError, UnprocessableError):
    """422: a stored row cannot be read back (bad JSON, wrong fields, a bad timestamp, a state
    of another version). Nothing was written; the row is left as it is, never repaired.

    It is both a :class:`StorageError` (the store holds something wrong) and an
    :class:`UnprocessableError` (a service answers 422 with problem details).

    Attributes:
        table: The table of the row.
        key: The row's key (``ckpt_id``, ``interrupt_id``, ``session_id`` ...).
        session_id: The session the row belongs to, when known.
        interrupt_id: For a pending call: its interrupt.
    """

    title = "Corrupted stored record"
    slug = "corrupt-record"

    def __init__(self, message: str, *, table: str, key: str, **context: Any) -> None:
        super().__init__(message, table=table, key=key, **context)

    def to_problem(self, instance: str | None = None) -> dict[str, Any]:
        """Problem details naming the table and the row (and the session / interrupt)."""
        if instance is None:
            instance = self.context.get("session_id") or self.context["key"]
        problem = super().to_problem(instance)
        problem.update(
            {
                k: v
                for k, v in self.context.items()
                if k in ("table", "key", "session_id", "interrupt_id", "checkpoint_id")
            }
        )
        return problem
