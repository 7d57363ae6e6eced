"""The slot diff viewer's merge flow: preview, confirm (on the background loop), cancel.

A mixin of :class:`~agcore_lab.jupyter.SlotDiffViewer`: ``Merge`` shows what
:meth:`AgentSession.merge_preview` says would happen, ``Confirm`` runs
:meth:`AgentSession.merge_slot` on agcore_lab's background loop and redraws when it ends,
``Cancel`` changes nothing (while a merge runs, it cancels it). Each is a method a user can call
in a cell.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import TYPE_CHECKING, Any

from agcore_lab.agent.slots import ContextSlot, MergeStrategy
from agcore_lab.errors import AgcoreError
from agcore_lab.jupyter.common.tasks import BackgroundTask
from agcore_lab.jupyter.diff.render import render_preview

if TYPE_CHECKING:
    from agcore_lab.agent.slot_ops import MergePreview

__all__ = ["MergeFlow"]


class MergeFlow:
    """Merge preview / confirm / cancel (needs the viewer's session, slots, widgets, ``diff``,
    ``_render``, ``refresh``, ``set_status`` and ``show_error``)."""

    session: Any
    left_slot_id: str
    right_slot_id: str
    diff: Any
    task: BackgroundTask[ContextSlot] | None
    pending_preview: MergePreview | None
    nothing_to_merge: bool
    _busy: bool
    _quiet: bool
    merge_button: Any
    confirm_button: Any
    refresh_button: Any
    strategy_dropdown: Any
    preview_html: Any
    confirm_box: Any
    _render: Any
    refresh: Any
    set_status: Any
    show_error: Any

    @property
    def strategy(self) -> MergeStrategy:
        """The merge strategy picked in the dropdown."""
        return MergeStrategy(self.strategy_dropdown.value)

    @property
    def preview_visible(self) -> bool:
        """Whether the merge preview with Confirm / Cancel is showing."""
        return bool(self.confirm_box.layout.display != "none")

    def _set_busy(self, busy: bool) -> None:
        # Cancel stays enabled: while a merge runs, it cancels it.
        self._busy = busy
        for button in (self.merge_button, self.confirm_button, self.refresh_button):
            button.disabled = busy
        self.strategy_dropdown.disabled = busy
        if not busy:
            self._render()

    def _strategy_changed(self, _change: object) -> None:
        if not self._quiet:
            self._render()
        if self.preview_visible and not self._quiet:
            self.preview_merge()

    def preview_merge(self, strategy: MergeStrategy | str | None = None) -> MergePreview | None:
        """Show what merging the right slot into the left one would do, and Confirm / Cancel.

        Args:
            strategy: Pick this strategy in the dropdown first.

        Returns:
            The preview, or ``None`` if it could not be made (the error is shown inline) or
            there is nothing to merge (said on the status line; no Confirm is offered).
        """
        if strategy is not None:
            self._quiet = True  # the dropdown's observer would compute the preview again
            try:
                self.strategy_dropdown.value = MergeStrategy(strategy)
            finally:
                self._quiet = False
        try:
            # Read the slots again first: header, rows and preview must agree.
            self.diff = self.session.diff_slots(self.left_slot_id, self.right_slot_id)
            self._render()
            preview = self.session.merge_preview(
                self.right_slot_id, into=self.left_slot_id, strategy=self.strategy
            )
        except AgcoreError as exc:
            self.show_error(exc)
            return None
        if self.nothing_to_merge:
            self._close_preview()
            self.set_status(f"Nothing to merge: {self.diff.summary()}")
            return None
        self.show_error(None)
        self.pending_preview = preview
        self.preview_html.value = render_preview(preview)
        self.confirm_box.layout.display = "flex"
        self.set_status("Check the preview, then Confirm or Cancel.")
        return preview

    def cancel_merge(self) -> None:
        """Close the preview without merging, or cancel the merge that is running.

        A merge is written in one transaction at its end, so cancelling it while it waits
        for the model (Summarize) leaves both slots as they were.
        """
        if self.task is not None and not self.task.done:
            self.task.cancel()
            return
        self._close_preview()
        self.set_status("Merge cancelled; nothing changed.")

    def _close_preview(self) -> None:
        self.pending_preview = None
        self.confirm_box.layout.display = "none"
        self.preview_html.value = ""

    @staticmethod
    def _same(a: MergePreview, b: MergePreview) -> bool:
        return (a.strategy, a.before, a.after, [m.id for m in a.incoming]) == (
            b.strategy,
            b.before,
            b.after,
            [m.id for m in b.incoming],
        )

    def confirm_merge(self) -> BackgroundTask[ContextSlot] | None:
        """Run the previewed merge on the background loop; the view updates when it ends.

        If the slots changed since the preview was shown, the new preview is shown instead and
        nothing is merged (confirm again). Returns the running task (``task.wait()`` blocks
        until the view is updated), or ``None`` when nothing was started.
        """
        shown = self.pending_preview
        if shown is None or (self.task is not None and not self.task.done):
            return None
        current = self.preview_merge(shown.strategy)
        if current is None:
            return None
        if not self._same(shown, current):
            self.set_status("The slots changed since the preview: check it and confirm again.")
            return None
        strategy = current.strategy
        self._set_busy(True)
        self.set_status(
            f"Merging {self.right_slot_id!r} into {self.left_slot_id!r} ({strategy.value})…"
        )
        coro = self.session.merge_slot(
            self.right_slot_id, into=self.left_slot_id, strategy=strategy
        )
        self.task = BackgroundTask(
            coro,
            on_success=lambda target: self._merged(target, strategy),
            on_error=self._merge_failed,
        )
        return self.task

    def _merged(self, target: ContextSlot, strategy: MergeStrategy) -> None:
        self._close_preview()
        self._set_busy(False)
        self.show_error(None)
        self.refresh()
        self.set_status(
            f"Merged {self.right_slot_id!r} into {target.slot_id!r} ({strategy.value}): "
            f"{target.slot_id!r} now has {len(target.messages)} messages."
        )

    def _merge_failed(self, exc: BaseException) -> None:
        self._set_busy(False)
        if isinstance(exc, concurrent.futures.CancelledError | asyncio.CancelledError):
            self.show_error(None)
            self._close_preview()
            self.refresh()
            self.set_status("Merge cancelled.")
            return
        self.show_error(exc)
        self.set_status("Merge failed; nothing changed.")
