"""Checkpoints as a pandas DataFrame, read by SQL from the store's ``checkpoints`` table.

``Checkpointer.to_dataframe`` is this: one query through the store's ``read_dataframe`` (part
of the :class:`~agcore_lab.store.base.Store` protocol, the ``FrameReader`` role) — as fast as
``pd.read_sql``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agcore_lab.store.base import Store

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FRAME_COLUMNS", "checkpoints_dataframe"]

FRAME_COLUMNS = [
    "ckpt_id",
    "session_id",
    "parent_ckpt_id",
    "turn_index",
    "created_at",
    "label",
    "source",
    "message_count",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost_usd",
    "agent_name",
    "current_slot_id",
]
_FRAME_SQL = (
    "SELECT ckpt_id, session_id, parent_ckpt_id, turn_index, created_at, label, source, "
    "message_count, prompt_tokens, completion_tokens, prompt_tokens + completion_tokens AS "
    "total_tokens, cost_usd, agent_name, current_slot_id FROM checkpoints"
)


def checkpoints_dataframe(store: Store, session_id: str | None = None) -> pd.DataFrame:
    """The checkpoints of ``session_id`` (or of every session), newest first, one per row.

    Columns: :data:`FRAME_COLUMNS` (``created_at`` in UTC, ``total_tokens`` = prompt +
    completion).
    """
    import pandas as pd  # lazy: keep `import agcore_lab` fast

    # A store that reads these rows faster than its SQL gives them (SQLite's lean layout).
    fast = getattr(store, "checkpoint_frame_columns", None)
    columns = fast(session_id) if callable(fast) else None
    if columns is not None:
        if not columns:
            return pd.DataFrame([], columns=FRAME_COLUMNS)
        frame = pd.DataFrame(columns, columns=FRAME_COLUMNS)
        frame["created_at"] = frame["created_at"].astype("datetime64[us, UTC]")
        return frame
    else:
        where, params = ("WHERE session_id = ?", [session_id]) if session_id else ("", [])
        frame = store.read_dataframe(f"{_FRAME_SQL} {where} ORDER BY ckpt_id DESC", params)
    if frame.empty:
        return pd.DataFrame([], columns=FRAME_COLUMNS)
    frame["created_at"] = pd.to_datetime(frame["created_at"], format="ISO8601", utc=True)
    return frame
