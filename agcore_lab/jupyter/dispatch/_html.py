"""HTML for a running ``dispatch_all``: the counts line and the task table (values escaped)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from agcore_lab.jupyter.common.text import badge

__all__ = ["TaskRow", "count_statuses", "render_counts", "render_tasks"]

MAX_TASK_CHARS = 120
FAILED = ("failed", "timed_out")


@dataclass(frozen=True)
class TaskRow:
    """One task of a dispatch, as shown."""

    index: int
    agent_name: str
    task: str
    status: str
    child_id: str | None
    reply: str | None = None
    error: str | None = None
    child_status: str | None = None  # the child's own status (see dispatch/status.py)

    @property
    def shown_status(self) -> str:
        """The child's own status once it exists, else the task's (``waiting``, ...)."""
        return self.child_status or self.status.replace("_", " ")


def count_statuses(statuses: Sequence[str]) -> dict[str, int]:
    """``waiting``, ``running``, ``done``, ``failed`` (incl. timed out) and ``cancelled``."""
    seen = Counter(statuses)
    return {
        "waiting": seen["waiting"],
        "running": seen["running"],
        "done": seen["completed"],
        "failed": sum(seen[s] for s in FAILED),
        "cancelled": seen["cancelled"],
    }


def render_counts(counts: dict[str, int], peak: int) -> str:
    """``waiting 3 · running 5 · done 10 · failed 1 · cancelled 0 · peak 5``."""
    parts = [f'<span class="agc-count-{k}">{k} {v}</span>' for k, v in counts.items()]
    return f'<span class="agc-counts">{" · ".join(parts)} · peak {peak} running</span>'


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_TASK_CHARS else flat[: MAX_TASK_CHARS - 1] + "…"


def _outcome(row: TaskRow) -> str:
    if row.error:
        return f'<span class="agc-error agc-task-error">{escape(_cut(row.error))}</span>'
    if row.reply is not None:
        return f'<span class="agc-task-reply">{escape(_cut(row.reply))}</span>'
    return ""


def render_tasks(rows: Sequence[TaskRow]) -> str:
    """The tasks on one page: number, status (the child's own once it exists: running,
    waiting for approval, done, failed, timed out, cancelled; else waiting), agent, task text,
    child session, and the reply (a preview) or the error text."""
    if not rows:
        return '<div class="agc-status">no tasks</div>'
    heads = "".join(
        f"<th>{h}</th>" for h in ("#", "status", "agent", "task", "child session", "reply / error")
    )
    body = "".join(
        f'<tr class="agc-task agc-task-{escape(r.status)}"><td>{r.index}</td>'
        f"<td>{badge(r.shown_status)}</td><td>{escape(r.agent_name)}</td>"
        f'<td class="agc-task-text">{escape(_cut(r.task))}</td>'
        f"<td><code>{escape(r.child_id or '')}</code></td><td>{_outcome(r)}</td></tr>"
        for r in rows
    )
    return f'<table class="agc-table agc-tasks"><tr>{heads}</tr>{body}</table>'
