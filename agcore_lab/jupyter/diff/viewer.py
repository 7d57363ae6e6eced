"""``SlotDiffViewer``: two context slots side by side, and a confirmed merge between them.

A thin view over the public API: the diff is :meth:`AgentSession.diff_slots`, the preview is
:meth:`AgentSession.merge_preview`, the merge is :meth:`AgentSession.merge_slot`. Every button
has a method a user can call in a cell (:meth:`SlotDiffViewer.preview_merge`,
:meth:`~SlotDiffViewer.confirm_merge`, :meth:`~SlotDiffViewer.cancel_merge`,
:meth:`~SlotDiffViewer.refresh`, :meth:`~SlotDiffViewer.show_more`, ...).
"""

from __future__ import annotations

import html
import threading
from collections.abc import Hashable
from typing import TYPE_CHECKING

import ipywidgets as widgets

from agcore_lab.agent.slot_diff import DiffRow, SlotDiff
from agcore_lab.agent.slots import ContextSlot, MergeStrategy
from agcore_lab.errors import AgcoreError, SlotNotFoundError
from agcore_lab.jupyter.common.history_parts import button
from agcore_lab.jupyter.common.refresh import Poller
from agcore_lab.jupyter.common.tasks import BackgroundTask
from agcore_lab.jupyter.common.text import cap_height, error_line
from agcore_lab.jupyter.common.theme import style_tag
from agcore_lab.jupyter.diff.merge import MergeFlow
from agcore_lab.jupyter.diff.render import render_diff, render_header

if TYPE_CHECKING:
    from agcore_lab.agent.session import AgentSession
    from agcore_lab.agent.slot_ops import MergePreview

__all__ = ["SlotDiffViewer"]


class SlotDiffViewer(MergeFlow, widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """Two slots of a session side by side, aligned at their fork point, with a merge button.

    The left slot is the merge target, the right slot the one merged from. The shared prefix
    is collapsed to one line (``Show shared`` expands it); changed messages carry word-level
    ``<ins>``/``<del>`` marks; messages on one side only are highlighted. Long histories show
    the last ``page_size`` rows (``Show more`` adds a page).

    Merging takes two steps: ``Merge`` shows what would happen (the preview sentence and the
    incoming messages), ``Confirm`` runs :meth:`AgentSession.merge_slot` on agcore_lab's
    background loop (the callback returns at once) and refreshes the view when it is done;
    ``Cancel`` changes nothing (while a merge runs, it cancels it). Errors appear inline, under
    the buttons.

    Args:
        session: The session holding both slots.
        left_slot: The target slot's name.
        right_slot: The other slot's name (merged from).
        page_size: Rows shown at first and added by each ``Show more``.

    Raises:
        SlotNotFoundError: Either slot is unknown.

    Example:
        >>> from agcore_lab import Agent, AgentSession, ScriptedModel
        >>> session = AgentSession(Agent(name="demo", model=ScriptedModel(["hi!", "more"])))
        >>> _ = session.submit_turn_sync("hello")
        >>> _ = session.fork_slot_sync("alt", switch=True)
        >>> _ = session.submit_turn_sync("go on")
        >>> viewer = SlotDiffViewer(session, "main", "alt")
        >>> viewer.diff.counts["right_only"]
        2
        >>> print(viewer.preview_merge().describe())
        This will append 2 message(s) from 'alt' to 'main' (2 -> 4 messages).
        >>> viewer.confirm_merge().wait(10)
        True
        >>> viewer.diff.identical
        True

    The view stays true to the session: a change made anywhere else (a merge or a turn in
    another cell) is seen within ``watch`` seconds and redrawn — the header, the rows, and the
    Merge button, which is disabled when there is nothing to merge. A slot that no longer
    exists is said so, and Merge stays disabled.

    Notes:
        The completion callback runs on the background loop's thread; it only sets widget
        traits, which is safe there. ``viewer.task.wait()`` blocks until the view is updated.
        The watch compares the two slots' lengths and last message ids (in memory, no store
        I/O) on the background loop; :meth:`close` stops it.
    """

    def __init__(
        self,
        session: AgentSession,
        left_slot: str,
        right_slot: str,
        *,
        page_size: int = 200,
        watch: float | None = 0.25,
    ) -> None:
        self.session = session
        self.left_slot_id = left_slot
        self.right_slot_id = right_slot
        self.page_size = max(1, page_size)
        self.limit = self.page_size
        self.shared_expanded = False
        self.pending_preview: MergePreview | None = None
        self.task: BackgroundTask[ContextSlot] | None = None
        self.last_error: BaseException | None = None
        self._quiet = False
        self._lock = threading.RLock()
        self.gone: str | None = None  # why the view's subject is gone, if it is
        self.nothing_to_merge = False
        self._busy = False
        self.diff: SlotDiff = session.diff_slots(left_slot, right_slot)

        self.style_html = widgets.HTML(style_tag())
        self.header_html = widgets.HTML()
        # No margin: with width 100% the default widget margin pushes the right column out.
        self.body_html = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.shared_button = button("Show shared", tooltip="Expand the shared prefix")
        self.more_button = button("Show more", tooltip="Show earlier rows")
        self.refresh_button = button("Refresh", tooltip="Read both slots again")
        self.strategy_dropdown = widgets.Dropdown(
            options=[(s.name, s) for s in MergeStrategy],
            value=MergeStrategy.Append,
            description="Strategy:",
            layout=widgets.Layout(width="220px"),
        )
        self.merge_button = button(
            f"Merge {right_slot} → {left_slot}",
            style="primary",
            tooltip=f"Preview merging {right_slot!r} into {left_slot!r}",
        )
        self.preview_html = widgets.HTML()
        self.confirm_button = button("Confirm", style="danger", tooltip="Run the merge")
        self.cancel_button = button("Cancel", tooltip="Close the preview, or stop a running merge")
        self.confirm_box = widgets.VBox(
            [self.preview_html, widgets.HBox([self.confirm_button, self.cancel_button])],
            layout=widgets.Layout(display="none"),
        )
        self.status_html = widgets.HTML()
        self.error_html = widgets.HTML()
        controls = widgets.HBox(
            [
                self.shared_button,
                self.more_button,
                self.refresh_button,
                self.strategy_dropdown,
                self.merge_button,
            ],
            layout=widgets.Layout(flex_flow="row wrap"),
        )
        super().__init__(
            [
                self.style_html,
                self.header_html,
                self.body_html,
                controls,
                self.confirm_box,
                self.status_html,
                self.error_html,
            ]
        )
        self.add_class("agc-view")
        self.add_class("agc-diff-viewer")
        cap_height(self)

        self.shared_button.on_click(lambda _: self.toggle_shared())
        self.more_button.on_click(lambda _: self.show_more())
        self.refresh_button.on_click(lambda _: self.refresh())
        self.merge_button.on_click(lambda _: self.preview_merge())
        self.confirm_button.on_click(lambda _: self.confirm_merge())
        self.cancel_button.on_click(lambda _: self.cancel_merge())
        self.strategy_dropdown.observe(self._strategy_changed, names="value")
        self._render()
        self.set_status(self.diff.summary())
        self._poller = Poller(self._fingerprint, self.refresh, every=watch) if watch else None

    def _fingerprint(self) -> Hashable:
        slots = self.session.slots
        parts: list[Hashable] = []
        for slot_id in (self.left_slot_id, self.right_slot_id):
            slot = slots.get(slot_id)
            messages = slot.messages if slot is not None else None
            parts.append(
                None if messages is None else (len(messages), messages[-1].id if messages else None)
            )
        return tuple(parts)

    def close(self) -> None:
        """Stop watching the session and close the widget."""
        poller = getattr(self, "_poller", None)
        if poller is not None:
            poller.stop()
        super().close()

    # -- what is shown ----------------------------------------------------------------------

    def visible_rows(self) -> tuple[tuple[DiffRow, ...], int, int]:
        """The rows drawn now, the shared rows folded away, and earlier rows cut by the page."""
        rows = self.diff.rows if self.shared_expanded else self.diff.tail
        hidden_shared = 0 if self.shared_expanded else self.diff.fork_index
        hidden_earlier = max(0, len(rows) - self.limit)
        return rows[hidden_earlier:], hidden_shared, hidden_earlier

    def _merge_possible(self) -> bool:
        """Whether merging would change anything (with the strategy picked now)."""
        if self.gone is not None:
            return False
        if self.diff.identical:
            return False
        if self.strategy is MergeStrategy.Replace:
            return True
        try:
            preview = self.session.merge_preview(
                self.right_slot_id, into=self.left_slot_id, strategy=self.strategy
            )
        except AgcoreError:
            return False
        return bool(preview.incoming)

    def _render(self) -> None:
        with self._lock:
            self._render_locked()

    def _render_locked(self) -> None:
        if self.gone is not None:
            self.header_html.value = (
                f'<div class="agc-head agc-gone"><b>Gone:</b> {html.escape(self.gone)}</div>'
            )
            for b in (self.merge_button, self.shared_button, self.more_button):
                b.disabled = True
            self.merge_button.description = "Nothing to merge"
            self.strategy_dropdown.disabled = True
            return
        rows, hidden_shared, hidden_earlier = self.visible_rows()
        left = self.session.slots.get(self.left_slot_id)
        right = self.session.slots.get(self.right_slot_id)
        self.header_html.value = render_header(
            self.diff,
            len(left.messages) if left else 0,
            len(right.messages) if right else 0,
        )
        self.nothing_to_merge = not self._merge_possible()
        busy = self._busy
        self.merge_button.disabled = self.nothing_to_merge or busy
        self.merge_button.description = (
            "Nothing to merge"
            if self.nothing_to_merge
            else f"Merge {self.right_slot_id} → {self.left_slot_id}"
        )
        self.strategy_dropdown.disabled = busy
        self.body_html.value = render_diff(
            self.diff, rows, hidden_shared=hidden_shared, hidden_earlier=hidden_earlier
        )
        shared = self.diff.fork_index
        self.shared_button.description = (
            "Hide shared" if self.shared_expanded else f"Show shared ({shared})"
        )
        self.shared_button.disabled = shared == 0
        self.more_button.disabled = hidden_earlier == 0
        self.more_button.description = (
            f"Show more ({hidden_earlier} hidden)" if hidden_earlier else "Show more"
        )

    def set_status(self, text: str) -> None:
        """Show ``text`` on the status line."""
        self.status_html.value = f'<div class="agc-status">{html.escape(text)}</div>'

    def show_error(self, exc: BaseException | None) -> None:
        """Show an error under the buttons (``None`` clears it); kept in ``last_error``."""
        self.last_error = exc
        self.error_html.value = (
            "" if exc is None else f'<div class="agc-error">{html.escape(error_line(exc))}</div>'
        )

    def toggle_shared(self, expanded: bool | None = None) -> None:
        """Expand or fold the shared prefix (flip it when ``expanded`` is ``None``)."""
        self.shared_expanded = not self.shared_expanded if expanded is None else expanded
        self._render()

    def show_more(self, rows: int | None = None) -> None:
        """Show ``rows`` more earlier rows (a page by default)."""
        self.limit += rows or self.page_size
        self._render()

    def refresh(self) -> None:
        """Read both slots again and redraw (an open merge preview is recomputed too).

        A slot that no longer exists makes the view say so (``viewer.gone``) and disables
        Merge; nothing to merge (the slots were merged elsewhere) disables it too and closes
        an open preview.
        """
        with self._lock:
            before = self.diff.summary() if self.gone is None else None
            try:
                self.diff = self.session.diff_slots(self.left_slot_id, self.right_slot_id)
            except SlotNotFoundError as exc:
                self.gone = f"{exc.message}; this view shows nothing more."
                self.show_error(exc)
                self._close_preview()
                self._render()
                self.set_status("A slot of this view no longer exists.")
                return
            except AgcoreError as exc:
                self.show_error(exc)
                return
            self.gone = None
            self._render()
            busy = self._busy
            if self.preview_visible and not busy:
                if self.nothing_to_merge:
                    self._close_preview()
                    self.set_status(f"Nothing to merge: {self.diff.summary()}")
                else:
                    self.preview_merge()
            elif not busy and not self.preview_visible and self.diff.summary() != before:
                # Only news replace the status line: a reload that finds what was shown
                # already keeps the outcome of the last action ("Merged ...") readable.
                self.set_status(self.diff.summary())

    # -- reprs ------------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"SlotDiffViewer({self.diff.summary()})"

    def _repr_html_(self) -> str:
        # Static fallback for nbviewer / exported HTML: the same grid, no buttons.
        rows, hidden_shared, hidden_earlier = self.visible_rows()
        grid = render_diff(
            self.diff, rows, hidden_shared=hidden_shared, hidden_earlier=hidden_earlier
        )
        return (
            f'{style_tag()}<div class="agc-view">{self.header_html.value}{grid}'
            f"{self.status_html.value}</div>"
        )
