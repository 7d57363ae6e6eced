"""Structured logging of the key operations, with their ids as ``extra`` fields.

Every :class:`~agcore_lab.SessionManager` logs its events to the ``agcore_lab.ops`` logger:
one record per operation, the message in plain words and the ids as attributes of the record
(``record.agcore_op``, ``record.session_id``, ``record.ckpt_id``, ``record.new_session_id``,
...), so a JSON log formatter or a log collector gets them as fields. Frequent operations
(a turn, an automatic checkpoint) log at DEBUG, the others at INFO. See
``docs/observability.md`` for the list.

Example:
    >>> import logging
    >>> logging.getLogger("agcore_lab.ops").setLevel(logging.INFO)
"""

from __future__ import annotations

import logging
from typing import Any

from agcore_lab.engine.records import ManagerEvent

__all__ = ["OPS_LOGGER", "log_event", "log_op", "logs_event"]

OPS_LOGGER = logging.getLogger("agcore_lab.ops")

# kind -> (level, message)
_EVENTS: dict[str, tuple[int, str]] = {
    "created": (logging.INFO, "session created"),
    "recovered": (logging.INFO, "session recovered"),
    "destroyed": (logging.INFO, "session destroyed"),
    "turn": (logging.DEBUG, "turn committed"),
    "checkpoint": (logging.DEBUG, "checkpoint created"),
    "rollback": (logging.INFO, "session rolled back"),
    "fork": (logging.INFO, "session forked"),
    "agent_switched": (logging.INFO, "agent switched"),
    "approval": (logging.INFO, "tool call decided"),
    "missed": (logging.INFO, "changes made elsewhere were missed; listeners re-read"),
}


def log_op(op: str, message: str, *, level: int = logging.INFO, **ids: Any) -> None:
    """Log one operation: ``message`` with ``agcore_op=op`` and the given ids as ``extra``."""
    if OPS_LOGGER.isEnabledFor(level):
        fields = {k: v for k, v in ids.items() if v is not None}
        OPS_LOGGER.log(level, message, extra={"agcore_op": op, **fields})


def logs_event(kind: str) -> bool:
    """Whether :func:`log_event` would log an event of this kind (its level is enabled)."""
    return OPS_LOGGER.isEnabledFor(_EVENTS.get(kind, (logging.INFO, ""))[0])


def log_event(event: ManagerEvent) -> None:
    """Log one manager event (``SessionManager.emit`` calls it for every event)."""
    level, message = _EVENTS.get(event.kind, (logging.INFO, event.kind))
    log_op(
        event.kind,
        message,
        level=level,
        session_id=event.session_id,
        ckpt_id=event.ckpt_id,
        new_session_id=event.new_session_id,
    )
