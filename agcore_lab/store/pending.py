"""Pending tool calls: the records of human approval, and the versioned session-state snapshot.

A tool that needs approval suspends its turn as a :class:`PendingToolCall`. Only these
transitions exist (anything else is an error, nothing is silently repaired)::

    PENDING_APPROVAL -> APPROVED_EXECUTING -> EXECUTED
    PENDING_APPROVAL -> REJECTED
    PENDING_APPROVAL -> EXPIRED

:class:`SessionState` is the versioned, strictly typed snapshot of a session's approval state
(``{"version": 2, "pending_tool_call": {...}, "run_context": {...}}``). It is also the state
the store keeps and resume reads: :class:`StoredSessionState` is that snapshot plus the
record's bookkeeping (``detail``), and every read of a stored call — a ``pending_calls`` row or
a checkpoint's ``pending_json`` — goes through :meth:`SessionState.parse`. A stored state that
is invalid or of another version is refused with a 422
:class:`~agcore_lab.errors.CorruptRecordError`; nothing is repaired and nothing is written.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from agcore_lab.errors import CorruptRecordError, UnprocessableError
from agcore_lab.ids import utcnow
from agcore_lab.llm.messages import ToolCall

__all__ = [
    "TRANSITIONS",
    "ApprovalStatus",
    "PendingToolCall",
    "PendingToolCallState",
    "PendingDetail",
    "RunContext",
    "STATE_VERSION",
    "SessionState",
    "StoredSessionState",
    "state_from_json",
]

STATE_VERSION: Literal[2] = 2

ApprovalStatus = Literal[
    "PENDING_APPROVAL", "APPROVED_EXECUTING", "EXECUTED", "REJECTED", "EXPIRED"
]
TRANSITIONS: dict[str, frozenset[str]] = {
    "PENDING_APPROVAL": frozenset({"APPROVED_EXECUTING", "REJECTED", "EXPIRED"}),
    "APPROVED_EXECUTING": frozenset({"EXECUTED"}),
    "EXECUTED": frozenset(),
    "REJECTED": frozenset(),
    "EXPIRED": frozenset(),
}


class PendingToolCall(BaseModel):
    """A tool call waiting for (or past) a person's decision.

    Attributes:
        interrupt_id: This interrupt's id (pass it to ``resume``).
        session_id: The session (the snapshot's ``thread_id``).
        run_id: The interrupted turn (pass it to ``resume``).
        tool_call_id: The model's id of the call.
        tool_name: The tool.
        tool_args: The arguments the model gave.
        status: Where the call is in its life (see the module docstring).
        created_at: When the turn was interrupted.
        expires_at: When an undecided call expires (``None``: never).
        decided_at: When a decision was recorded.
        decision: ``{"kind": "approve", "arguments": {...}}`` or
            ``{"kind": "reject", "reason": "..."}`` once decided.
        result: The tool's result text once executed.
        remaining_calls: Calls of the same model answer still to run after this one.
        previous_interrupt_id: For a call restored by a rollback or fork: the original.
        previously_executed: The original of a restored call had already run.
        executor: Who runs (or ran) an approved call: ``host:pid:token``.
        executor_expires_at: When the executor's lease runs out unless it renews it.
    """

    model_config = ConfigDict(frozen=True)

    interrupt_id: str
    session_id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    tool_args: dict[str, JsonValue] = Field(default_factory=dict)
    status: ApprovalStatus = "PENDING_APPROVAL"
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime | None = None
    decided_at: datetime | None = None
    decision: dict[str, JsonValue] | None = None
    result: JsonValue = None
    updated_at: datetime = Field(default_factory=utcnow)
    remaining_calls: list[ToolCall] = Field(default_factory=list)
    previous_interrupt_id: str | None = None
    previously_executed: bool = False
    executor: str | None = None
    executor_expires_at: datetime | None = None

    @property
    def in_doubt(self) -> bool:
        """An approved call whose executor stopped renewing its lease (it crashed or hangs):
        the tool may or may not have run. A person settles it with ``manager.settle``."""
        if self.status != "APPROVED_EXECUTING":
            return False
        return self.executor_expires_at is None or utcnow() >= self.executor_expires_at

    @property
    def call(self) -> ToolCall:
        """The tool call as the model made it."""
        return ToolCall(id=self.tool_call_id, name=self.tool_name, arguments=self.tool_args)

    def expired(self, now: datetime | None = None) -> bool:
        """Whether an undecided call is past its expiry."""
        return self.expires_at is not None and (now or utcnow()) >= self.expires_at

    def to_state(self) -> SessionState:
        """The versioned snapshot of this call and its run."""
        return SessionState(
            pending_tool_call=PendingToolCallState(
                interrupt_id=self.interrupt_id,
                tool_name=self.tool_name,
                tool_args=self.tool_args,
                status=self.status,
                expires_at=self.expires_at,
                decision=self.decision,
                result=self.result,
                updated_at=self.updated_at,
            ),
            run_context=RunContext(thread_id=self.session_id, run_id=self.run_id),
        )

    def to_stored(self) -> StoredSessionState:
        """The versioned state as the store keeps it (the snapshot plus ``detail``)."""
        state = self.to_state()
        return StoredSessionState(
            pending_tool_call=state.pending_tool_call,
            run_context=state.run_context,
            detail=PendingDetail(
                tool_call_id=self.tool_call_id,
                created_at=self.created_at,
                decided_at=self.decided_at,
                remaining_calls=list(self.remaining_calls),
                previous_interrupt_id=self.previous_interrupt_id,
                previously_executed=self.previously_executed,
                executor=self.executor,
                executor_expires_at=self.executor_expires_at,
            ),
        )

    @classmethod
    def from_stored(cls, state: StoredSessionState) -> PendingToolCall:
        """The call a validated stored state describes."""
        call, run, detail = state.pending_tool_call, state.run_context, state.detail
        return cls(
            interrupt_id=call.interrupt_id,
            session_id=run.thread_id,
            run_id=run.run_id,
            tool_call_id=detail.tool_call_id,
            tool_name=call.tool_name,
            tool_args=call.tool_args,
            status=call.status,
            created_at=detail.created_at,
            expires_at=call.expires_at,
            decided_at=detail.decided_at,
            decision=call.decision,
            result=call.result,
            updated_at=call.updated_at,
            remaining_calls=detail.remaining_calls,
            previous_interrupt_id=detail.previous_interrupt_id,
            previously_executed=detail.previously_executed,
            executor=detail.executor,
            executor_expires_at=detail.executor_expires_at,
        )


class PendingToolCallState(BaseModel):
    """The ``pending_tool_call`` object of a :class:`SessionState`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    interrupt_id: str
    tool_name: str
    tool_args: dict[str, JsonValue]
    status: ApprovalStatus
    expires_at: datetime | None
    decision: dict[str, JsonValue] | None
    result: JsonValue
    updated_at: datetime


class RunContext(BaseModel):
    """The ``run_context`` object: ``thread_id`` is the session id, ``run_id`` the turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    thread_id: str
    run_id: str


class SessionState(BaseModel):
    """The versioned approval state of a session (version 2).

    ``version``, ``pending_tool_call`` and ``run_context`` are all required: ``{"version": 2}``
    alone, or a ``pending_tool_call`` that is not an object of the right fields, is invalid.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[2] = STATE_VERSION
    pending_tool_call: PendingToolCallState
    run_context: RunContext

    @classmethod
    def parse(cls, data: SessionState | dict[str, Any] | str | bytes) -> Self:
        """Validate a state snapshot.

        Raises:
            UnprocessableError: Not version 2, or a required field missing or of the wrong type.
        """
        if isinstance(data, cls):
            return data
        try:
            raw = json.loads(data) if isinstance(data, str | bytes) else data
        except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8/16/32
            raise UnprocessableError(f"the session state is not valid JSON: {exc}") from exc
        if not isinstance(raw, dict) or raw.get("version") != 2:
            version = raw.get("version") if isinstance(raw, dict) else None
            raise UnprocessableError(
                f"session state version {version!r} is not supported; expected version 2"
            )
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
            )
            raise UnprocessableError(f"invalid session state: {problems}") from exc


class PendingDetail(BaseModel):
    """The stored record's bookkeeping beside the design's state: what resume and rollback
    need that the snapshot does not carry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_call_id: str
    created_at: datetime
    decided_at: datetime | None = None
    remaining_calls: list[ToolCall] = Field(default_factory=list)
    previous_interrupt_id: str | None = None
    previously_executed: bool = False
    executor: str | None = None
    executor_expires_at: datetime | None = None


class StoredSessionState(SessionState):
    """A :class:`SessionState` as the store keeps it: the version-2 snapshot plus ``detail``.

    Parsed as strictly as the snapshot (``StoredSessionState.parse``)."""

    detail: PendingDetail


def state_from_json(text: str | bytes, *, table: str, key: str, **context: Any) -> PendingToolCall:
    """Parse a stored state strictly into its call.

    Raises:
        CorruptRecordError: The stored text is not a valid version-2 state; the error names
            the table, the row and what was wrong.
    """
    try:
        return PendingToolCall.from_stored(StoredSessionState.parse(text))
    except UnprocessableError as exc:
        raise CorruptRecordError(
            f"the stored pending tool call cannot be read: {exc.message}; the row is left as "
            "it is (restore it from a backup, or delete it)",
            table=table,
            key=key,
            **context,
        ) from exc
