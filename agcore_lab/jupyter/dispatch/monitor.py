"""``DispatchMonitor``: run a ``dispatch_all`` from a cell and watch it, with a Cancel button.

A thin view over :meth:`SessionManager.dispatch_all`: the monitor starts it on agcore_lab's
background loop (the notebook stays responsive), shows its ``on_progress`` counts as a progress
bar and a paged task table, and embeds a :class:`~agcore_lab.jupyter.SessionTreeBrowser` in which
the child sessions appear and finish live. **Cancel** cancels the future that
:func:`agcore_lab.aio.submit` returned for the dispatch: the running children stop cleanly, the
unfinished tasks show ``cancelled``, and the finished ones keep their results and checkpoints.
"""

from __future__ import annotations

import dataclasses
import html
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agcore_lab.engine.dispatch import DispatchConfig, DispatchProgress, SubTaskError, SubTaskResult
from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter._manager import live_session
from agcore_lab.jupyter.common.history_parts import button
from agcore_lab.jupyter.common.tasks import BackgroundTask
from agcore_lab.jupyter.common.text import error_line
from agcore_lab.jupyter.common.theme import style_tag
from agcore_lab.jupyter.common.view import ManagerView
from agcore_lab.jupyter.dispatch._html import TaskRow, count_statuses, render_counts, render_tasks
from agcore_lab.jupyter.dispatch.runner import DispatchRun, Outcome
from agcore_lab.jupyter.dispatch.status import child_state
from agcore_lab.jupyter.tree.browser import SessionTreeBrowser

if TYPE_CHECKING:
    import pandas as pd

    from agcore_lab.agent.agent import Agent
    from agcore_lab.engine.manager import SessionManager

__all__ = ["DispatchMonitor"]

_BAR_STYLE = {"running": "info", "cancelled": "danger", "failed": "danger"}


def _error_text(error: SubTaskError) -> str:
    cause = error.error
    detail = error_line(cause) if cause is not None else error_line(error)
    return f"{error.status}: {detail.removeprefix('agcore: ')}"


class DispatchMonitor(DispatchRun, ManagerView):
    """Start ``manager.dispatch_all(parent_id, tasks, config)`` and show its progress live.

    Shows a progress bar (finished of all tasks), the counts — waiting, running, done, failed,
    cancelled, and the peak of concurrently running children — a paged table of the tasks with
    their status, child session and reply preview (read as each child finishes) or error text
    (known when the dispatch completes: the engine's progress carries statuses, not errors, and
    a cancelled dispatch returns no results), and (``tree=True``) the session tree scoped to the
    parent and its children. In both, each child shows its **own status** from the moment it
    exists, live (:meth:`child_status`): ``running`` while its turn runs, ``waiting for
    approval`` while a tool call of it waits for a decision (made in any cell, view or kernel),
    then ``done``, ``failed``, ``timed out`` or ``cancelled``; a task with no child yet shows
    ``waiting``. **Cancel** stops the dispatch.

    Args:
        manager: The session manager.
        parent_id: The parent session of the children.
        tasks: ``(sub_agent, task_text)`` pairs.
        config: The ``DispatchConfig`` (concurrency limit, memory bridging, timeout).
        tree: Embed a ``SessionTreeBrowser`` (``monitor.tree_browser``).
        page_size: Tasks per page of the table.
        display: Display the monitor at once (so ``monitor = DispatchMonitor(...)`` shows it).
        on_progress: Also called with the engine's ``DispatchProgress`` at every change.

    Raises:
        SessionNotFoundError: No such parent session.
        InvalidInputError: ``tasks`` are not ``(sub_agent, task_text)`` pairs.

    Example:
        >>> from agcore_lab import Agent, DispatchConfig, ScriptedModel, SessionManager
        >>> manager = SessionManager()
        >>> lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
        >>> worker = Agent(name="worker", model=ScriptedModel(lambda messages: "ok"))
        >>> monitor = DispatchMonitor(manager, lead, [(worker, f"task {i}") for i in range(4)],
        ...                           DispatchConfig(max_concurrency=2), display=False)
        >>> [r.response for r in monitor.results()]
        ['ok', 'ok', 'ok', 'ok']
        >>> monitor.outcome, monitor.bar.value, monitor.counts["done"]
        ('completed', 4, 4)
        >>> monitor.close()

    Notes:
        Progress arrives on agcore_lab's background loop; the monitor only schedules a redraw
        from it. ``monitor.wait()`` blocks until the dispatch ended and the view caught up;
        ``monitor.results()`` waits, then returns the results in input order.
    """

    def __init__(
        self,
        manager: SessionManager,
        parent_id: str,
        tasks: Iterable[tuple[Agent, str]],
        config: DispatchConfig | None = None,
        *,
        tree: bool = True,
        page_size: int = 20,
        display: bool = True,
        on_progress: Callable[[DispatchProgress], None] | None = None,
    ) -> None:
        manager.require_stored(parent_id)
        pairs = list(tasks)
        if not all(isinstance(t, tuple | list) and len(t) == 2 for t in pairs):
            raise InvalidInputError("tasks are (sub_agent, task_text) pairs")
        super().__init__(manager, page_size=page_size, prev_label="◀ Prev", next_label="Next ▶")
        self.parent_id = parent_id
        self.tasks: list[tuple[Agent, str]] = [(a, t) for a, t in pairs]
        self.config = config or DispatchConfig()
        n = len(self.tasks)
        self.progress = DispatchProgress(
            total=n, waiting=n, child_ids=[None] * n, statuses=["waiting"] * n
        )
        self.outcome: Outcome = "running"
        self.error: BaseException | None = None
        self.elapsed: float | None = None
        self._results: list[SubTaskResult | SubTaskError] | None = None
        self._replies: dict[str, str] = {}  # child id -> its reply, read as children finish
        self.waiting_children: set[str] = set()  # children with a call waiting for approval
        self._live: DispatchProgress | None = None
        self._user_progress = on_progress
        self._began = False
        self._cancelling = False
        self._settled = threading.Event()
        self._t0 = time.monotonic()

        self.style_html.value = style_tag()
        self.bar = widgets.IntProgress(value=0, min=0, max=max(1, n), description=f"0/{n}")
        self.bar.add_class("agc-dispatch-bar")
        self.counts_html = widgets.HTML()
        self.cancel_button = button("Cancel", style="danger", tooltip="Stop the unfinished tasks")
        self.cancel_button.on_click(lambda _: self.cancel())
        self.table_html = widgets.HTML()
        self.tree_browser = (
            SessionTreeBrowser(manager, root=parent_id, status_of=self.child_status)
            if tree
            else None
        )
        row = widgets.Layout(flex_flow="row wrap", align_items="center")
        self.children = [
            self.style_html,
            self.header_html,
            widgets.HBox([self.bar, self.counts_html, self.cancel_button], layout=row),
            self.status_html,
            self.error_html,
            self.table_html,
            widgets.HBox([self.prev_button, self.page_html, self.next_button], layout=row),
            *([self.tree_browser] if self.tree_browser is not None else []),
        ]
        self.add_class("agc-dispatch-monitor")
        self._loader(self._snapshot, self._loaded)
        # A child's approvals and turns arrive as manager events (from any kernel).
        self._unsubscribe = manager.add_listener(self._on_event)
        self._render()
        self.dispatch_task: BackgroundTask[list[SubTaskResult | SubTaskError]] = BackgroundTask(
            self._run(), on_success=self._succeeded, on_error=self._failed
        )
        if self.tree_browser is not None:
            self.tree_browser.select(parent_id)
        if display:
            from IPython.display import display as show

            show(self)

    # -- loading and waiting ------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        # On the thread that made the change: only a child's own news schedule a reload (and
        # a ``missed``: the watcher fell behind, so any child may have changed).
        if (
            event.kind == "missed"
            or event.session_id in self.progress.child_ids
            or (self._live is not None and event.session_id in self._live.child_ids)
        ):
            self.refresh()

    async def _snapshot(self) -> tuple[DispatchProgress | None, set[str]]:
        live = self._live
        snapshot = (
            None
            if live is None
            else dataclasses.replace(
                live, child_ids=list(live.child_ids), statuses=list(live.statuses)
            )
        )
        children = {c for c in (snapshot or self.progress).child_ids if c is not None}
        waiting = {
            c.session_id
            for c in (self.manager.pending_calls() if children else [])
            if c.session_id in children and c.status == "PENDING_APPROVAL"
        }
        if snapshot is None:
            return None, waiting
        # Replies of children that finished, while the others still run (read once each).
        for child, status in zip(snapshot.child_ids, snapshot.statuses, strict=False):
            if status == "completed" and child is not None and child not in self._replies:
                session = await live_session(self.manager, child)
                answers = [m for m in session.messages if m.role == "assistant"] if session else []
                self._replies[child] = answers[-1].text if answers else ""
        return snapshot, waiting

    def _loaded(self, loaded: tuple[DispatchProgress | None, set[str]]) -> None:
        snapshot, waiting = loaded
        with self._lock:
            if snapshot is not None:
                self.progress = snapshot
            self.waiting_children = waiting
            self._render()
        if self.tree_browser is not None:
            self.tree_browser.redraw()  # the children's statuses come from the progress

    # -- what is shown ------------------------------------------------------------------------

    @property
    def counts(self) -> dict[str, int]:
        """``waiting``, ``running``, ``done``, ``failed`` and ``cancelled`` tasks now."""
        return count_statuses(self.progress.statuses)

    def _row_count(self) -> int:
        return len(self.tasks)

    def rows(self) -> list[TaskRow]:
        """Every task, as shown in the table (with the reply or error once it ended)."""
        p = self.progress
        results = dict(enumerate(self._results or []))
        rows = []
        for i, (agent, text) in enumerate(self.tasks):
            result = results.get(i)
            child = p.child_ids[i]
            reply = result.response if isinstance(result, SubTaskResult) else None
            if reply is None and result is None and child is not None:
                reply = self._replies.get(child)
            error = _error_text(result) if isinstance(result, SubTaskError) else None
            own = self._own_status(child, p.statuses[i])
            rows.append(TaskRow(i, agent.name, text, p.statuses[i], child, reply, error, own))
        return rows

    def _own_status(self, child: str | None, task_status: str) -> str | None:
        if child is None:
            return None
        return child_state(task_status, waits_for_approval=child in self.waiting_children)

    def child_status(self, session_id: str) -> str | None:
        """A child session's own status: ``running``, ``waiting for approval``, ``done``,
        ``failed``, ``timed out`` or ``cancelled`` (``None`` for other sessions). It is known
        from the moment the child exists and follows it live (a tool call waiting for a
        decision, decided in any cell, view or kernel)."""
        p = self.progress
        for child, status in zip(p.child_ids, p.statuses, strict=False):
            if child == session_id:
                return self._own_status(child, status)
        return None

    def page_rows(self) -> Sequence[TaskRow]:
        """The tasks on the current page."""
        start = self.page * self.page_size
        return self.rows()[start : start + self.page_size]

    def _status_text(self, counts: dict[str, int]) -> str:
        elapsed = self.elapsed if self.elapsed is not None else time.monotonic() - self._t0
        tally = f"{counts['done']} completed, {counts['failed']} failed"
        if self.outcome == "completed":
            return f"Done in {elapsed:.2f} s: {tally}."
        if self.outcome == "cancelled":
            return (
                f"Cancelled after {elapsed:.2f} s: {tally}, {counts['cancelled']} cancelled. "
                "Finished children keep their results and checkpoints."
            )
        if self.outcome == "failed":
            return f"The dispatch failed after {elapsed:.2f} s ({tally} before it stopped)."
        if self._cancelling:
            return "Cancelling: the running children are being stopped…"
        return f"Running for {elapsed:.1f} s: {tally} so far."

    def _header(self) -> str:
        return (
            '<div class="agc-head"><b>Dispatch</b> from '
            f"<code>{html.escape(self.parent_id)}</code> · "
            f"{len(self.tasks)} tasks · at most {self.config.max_concurrency} at once</div>"
        )

    def _render(self) -> None:
        with self._lock:
            self._render_paging()
            counts = self.counts
            total = self.progress.total
            finished = total - counts["waiting"] - counts["running"]
            self.bar.max = max(1, total)
            self.bar.value = finished
            self.bar.description = f"{finished}/{total}"
            style = _BAR_STYLE.get(self.outcome, "success")
            self.bar.bar_style = "warning" if style == "success" and counts["failed"] else style
            self.counts_html.value = render_counts(counts, self.progress.peak_running)
            self.table_html.value = render_tasks(self.page_rows())
            self.header_html.value = self._header()
            self.cancel_button.disabled = self.outcome != "running" or self._cancelling
            self.set_status(self._status_text(counts))

    def to_dataframe(self) -> pd.DataFrame:
        """One row per task: agent, task, status, child session, response and summary (the
        child's ``result_summary``), as far as the dispatch got."""
        import pandas as pd

        by_index = dict(enumerate(self._results or []))
        records = []
        for row in self.rows():
            result = by_index.get(row.index)
            response = result.response if isinstance(result, SubTaskResult) else None
            summary: Any = result.summary if isinstance(result, SubTaskResult) else None
            if summary is None and row.status == "completed" and row.child_id is not None:
                summary = self.manager.child_memory(row.child_id).get("result_summary")
            error = str(result) if isinstance(result, SubTaskError) else None
            records.append(
                {
                    "task": row.task,
                    "agent": row.agent_name,
                    "status": row.status,
                    "child_id": row.child_id,
                    "response": response,
                    "summary": summary,
                    "error": error,
                }
            )
        columns = ["task", "agent", "status", "child_id", "response", "summary", "error"]
        return pd.DataFrame(records, columns=columns)

    # -- lifetime and reprs -------------------------------------------------------------------

    def close(self) -> None:
        """Stop following the dispatch (it keeps running; :meth:`cancel` stops it) and close."""
        browser = getattr(self, "tree_browser", None)
        if browser is not None:
            browser.close()
        super().close()

    def __repr__(self) -> str:
        c = self.counts
        return (
            f"DispatchMonitor({len(self.tasks)} tasks: {c['done']} done, {c['failed']} failed, "
            f"{c['running']} running, {c['waiting']} waiting, {c['cancelled']} cancelled; "
            f"{self.outcome})"
        )

    def _repr_html_(self) -> str:
        # Static fallback for nbviewer / exported HTML.
        return (
            f'{style_tag()}<div class="agc-view">{self._header()}'
            f"{render_counts(self.counts, self.progress.peak_running)}"
            f"{render_tasks(self.page_rows())}</div>"
        )
