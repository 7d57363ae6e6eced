"""Request and response bodies of the service (pydantic models: the OpenAPI document's schemas).

Engine records (``TurnResult``, ``PendingToolCall``, ``CkptMeta``, ``SessionSnapshot``) are
returned as they are; the models here are the requests and the few views the engine has no
model for. Requests forbid unknown fields, so a typo is a 400, not a silent default.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from agcore_lab.engine.records import SessionNode
from agcore_lab.store.base import SessionRecord
from agcore_lab.store.pending import PendingToolCall, SessionState

__all__ = [
    "CheckpointRequest",
    "CreateSession",
    "CreatedSession",
    "Page",
    "PendingDetail",
    "ResumeRequest",
    "SessionInfo",
    "TreeNode",
    "TurnRequest",
]

T = TypeVar("T")
_NAME = r"^[A-Za-z0-9_.:-]{1,64}$"
_ID = r"^[A-Za-z0-9_.:-]{1,128}$"


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateSession(_Request):
    """``POST /sessions``: a root session (or a child, with ``parent_id``) for an agent."""

    agent: str = Field(pattern=_NAME, description="the name of a registered agent")
    parent_id: str | None = Field(default=None, pattern=_ID)


class CreatedSession(BaseModel):
    """The new session."""

    session_id: str
    agent: str
    parent_id: str | None = None


class TurnRequest(_Request):
    """``POST /sessions/{id}/turns``: the user's text (bounded, see ``Limits``)."""

    text: str = Field(min_length=1, max_length=100_000)


class ResumeRequest(_Request):
    """``POST .../resume``: a person's decision on a pending tool call.

    ``approve`` may carry edited ``arguments`` (and ``rerun`` for a call restored by a
    rollback whose original already ran); ``reject`` may carry a ``reason`` the model sees.
    """

    decision: Literal["approve", "reject"]
    arguments: dict[str, JsonValue] | None = None
    reason: str | None = Field(default=None, max_length=2_000)
    rerun: bool = False

    @model_validator(mode="after")
    def _fits_the_decision(self) -> ResumeRequest:
        if self.decision == "reject" and (self.arguments is not None or self.rerun):
            raise ValueError("'arguments' and 'rerun' go with 'approve', not 'reject'")
        if self.decision == "approve" and self.reason is not None:
            raise ValueError("'reason' goes with 'reject', not 'approve'")
        if self.arguments is not None:
            try:  # NaN / Infinity parse in Python but are not JSON: the store refuses them
                json.dumps(self.arguments, allow_nan=False)
            except ValueError:
                raise ValueError("'arguments' holds NaN or Infinity, which JSON has not") from None
        return self


class CheckpointRequest(_Request):
    """``POST /sessions/{id}/checkpoints``: take a checkpoint now."""

    label: str | None = Field(default=None, max_length=200)


class SessionInfo(BaseModel):
    """A stored session: its scalar state, whether this server holds it live, its waiting
    calls."""

    session_id: str
    agent_name: str
    parent_id: str | None
    turn_index: int
    current_slot_id: str
    created_at: datetime
    updated_at: datetime
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    live: bool
    pending: list[PendingToolCall] = Field(default_factory=list)

    @classmethod
    def of(
        cls, record: SessionRecord, *, live: bool, pending: list[PendingToolCall]
    ) -> SessionInfo:
        """The view of a stored record."""
        return cls(
            session_id=record.session_id,
            agent_name=record.agent_name,
            parent_id=record.parent_id,
            turn_index=record.turn_index,
            current_slot_id=record.current_slot_id,
            created_at=record.created_at,
            updated_at=record.updated_at,
            prompt_tokens=record.prompt_tokens,
            completion_tokens=record.completion_tokens,
            cost_usd=record.cost_usd,
            live=live,
            pending=pending,
        )


class TreeNode(BaseModel):
    """One session of the tree, with its children."""

    session_id: str
    agent_name: str
    parent_id: str | None
    turn_index: int
    cost_usd: float
    total_tokens: int
    created_at: datetime
    status: Literal["live", "stored"]
    orphan: bool
    children: list[TreeNode]

    @classmethod
    def of(cls, node: SessionNode) -> TreeNode:
        """The view of an engine tree node (recursively)."""
        fields: dict[str, Any] = {k: getattr(node, k) for k in cls.model_fields if k != "children"}
        return cls(**fields, children=[cls.of(c) for c in node.children])


class PendingDetail(BaseModel):
    """One pending call and its versioned session state (``version: 2``)."""

    call: PendingToolCall
    state: SessionState
    seconds_left: float | None = Field(description="until it expires; null: never")
    in_doubt: bool = Field(
        default=False,
        description="approved, but its executor died while the tool ran: settle it",
    )


class SettleRequest(_Request):
    """``POST .../settle``: resolve an in-doubt call with what a person knows.

    ``result`` is what the tool did, as far as they know (``"it did run: ..."``); without it
    the model is told the outcome is unknown.
    """

    result: str | None = Field(default=None, max_length=20_000)


class Page(BaseModel, Generic[T]):
    """One page of a listing."""

    items: list[T]
    total: int
    offset: int
    limit: int
