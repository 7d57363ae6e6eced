"""A dispatch child's own status, from the dispatch's view of its task and the approval queue.

The engine's :class:`~agcore_lab.DispatchProgress` says how each *task* stands (``waiting``,
``running``, ``completed``, ``failed``, ``timed_out``, ``cancelled``) and names its child
session as soon as it exists. A child's own status adds what the task status cannot say: a
child whose turn stopped at a tool call that needs approval is ``waiting for approval`` — while
the dispatch runs, and after it counted the task as completed — until a person decides.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["CHILD_STATES", "ChildState", "child_state"]

ChildState = Literal["running", "waiting for approval", "done", "failed", "timed out", "cancelled"]
CHILD_STATES: tuple[ChildState, ...] = (
    "running",
    "waiting for approval",
    "done",
    "failed",
    "timed out",
    "cancelled",
)
_OF_TASK: dict[str, ChildState] = {
    "running": "running",
    "completed": "done",
    "failed": "failed",
    "timed_out": "timed out",
    "cancelled": "cancelled",
}


def child_state(task_status: str, *, waits_for_approval: bool) -> ChildState | None:
    """The child's status given its task's status (``None`` while the task has no child yet).

    Example:
        >>> child_state("running", waits_for_approval=False)
        'running'
        >>> child_state("completed", waits_for_approval=True)
        'waiting for approval'
        >>> child_state("completed", waits_for_approval=False), child_state("waiting",
        ...     waits_for_approval=False)
        ('done', None)
    """
    state = _OF_TASK.get(task_status)
    if state in ("running", "done") and waits_for_approval:
        return "waiting for approval"
    return state
