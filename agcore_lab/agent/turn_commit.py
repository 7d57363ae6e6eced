"""What a turn's commit may carry besides the turn: its automatic checkpoint and memory writes.

A manager writes a checkpoint after every turn. When nothing else writes between the turn's
commit and that checkpoint (no automatic summary, no other turn-end hook), the checkpoint is
built from the state the commit leaves and stored *in* the commit — the same transaction,
the same version check — and the commit also gives the turn lease up: one write instead of
three. A dispatch adds the child's ``result_summary`` memory entry to the same write (only
if the child has none: a ``MemoryIfUnset``).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from agcore_lab.agent.bundle import TurnHook
from agcore_lab.store.base import CkptMeta, MemoryWrite
from agcore_lab.store.pending import PendingToolCall

if TYPE_CHECKING:
    from agcore_lab.agent.session import AgentSession
    from agcore_lab.agent.turn import TurnDraft

__all__ = ["MemoryWrites", "TurnCheckpoint", "TurnMemory", "checkpoint_after"]

logger = logging.getLogger("agcore_lab")

MemoryWrites: TypeAlias = Sequence[MemoryWrite]
TurnMemory: TypeAlias = Callable[["TurnDraft"], MemoryWrites]


@dataclass(frozen=True)
class TurnCheckpoint:
    """The automatic after-turn checkpoint of a session, as its manager makes it.

    Attributes:
        make: Builds the checkpoint from the session (as its turn's commit leaves it) and
            the turn's new pending call; ``None``: no checkpoint after this turn.
        hook: The turn-end hook that writes the checkpoint when it cannot go with the commit;
            it finds a checkpoint that went with the commit in ``session.folded_checkpoint``.
    """

    make: Callable[[AgentSession, PendingToolCall | None], CkptMeta | None]
    hook: TurnHook


def checkpoint_after(
    session: AgentSession, draft: TurnDraft, turn_index: int, pending: PendingToolCall | None
) -> CkptMeta | None:
    """The session's after-turn checkpoint, built from the state committing ``draft`` leaves,
    or ``None`` when a failure to build it is logged (the hook then tries, and logs, again).

    It is built from a shallow copy holding that state: the live object, which other threads
    may read, is not touched before the commit succeeds.
    """
    maker = session.turn_checkpoint
    assert maker is not None
    after = copy.copy(session)
    after.slots = {**session.slots, draft.slot.slot_id: draft.slot}
    after.turn_index, after.cost_tracker = turn_index, draft.cost
    after.pending_interrupt_id = None  # the new call is not stored yet: passed in instead
    try:
        return maker.make(after, pending)
    except Exception:
        logger.warning(
            "could not build the checkpoint of session %s's turn", session.session_id, exc_info=True
        )
        return None
