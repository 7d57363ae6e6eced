"""One tool call in the :class:`~agcore_lab.jupyter.ApprovalPanel`: fields, buttons, editors.

A card shows what it is given (:meth:`CallCard.show`) and holds the text a person is typing (the
edited arguments, the reason for a rejection, what happened to an in-doubt call) and whether it
is selected across reloads; the panel owns the data and wires the buttons to its own methods.

Compact: the selection box and the head share the first line; the arguments (one line when
short), the time left and the buttons the second; the turn that led to the call is folded
under them, and an HTML part with nothing to show is hidden, not left as an empty line.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

import ipywidgets as widgets

from agcore_lab.jupyter.approval._html import (
    render_arguments,
    render_call_head,
    render_doubt,
    render_outcome,
    render_time_left,
    render_warning,
)
from agcore_lab.jupyter.common.history_parts import button

if TYPE_CHECKING:
    from agcore_lab.jupyter.approval.ops import ApprovalOutcome
    from agcore_lab.store.pending import PendingToolCall

__all__ = ["CallCard"]

_HIDDEN = "none"
_SHOWN = "flex"


def _put(widget: widgets.HTML, value: str) -> None:
    """Set an HTML part, hiding it when empty (an empty HTML widget still takes a line)."""
    if widget.value != value:
        widget.value = value
    display = _HIDDEN if not value else ""
    if widget.layout.display != display:
        widget.layout.display = display


class CallCard(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """The widgets of one pending (or decided) call."""

    def __init__(self, call: PendingToolCall) -> None:
        self.call = call
        self.select_box = widgets.Checkbox(
            value=False, indent=False, layout=widgets.Layout(width="22px")
        )
        self.select_box.add_class("agc-select")
        self.head_html = widgets.HTML()
        self.time_html = widgets.HTML()
        self.doubt_html = widgets.HTML()
        self.warning_html = widgets.HTML()
        self.args_html = widgets.HTML()
        self.turn_html = widgets.HTML()
        self.approve_button = button("Approve", style="success", tooltip="Run the tool once")
        self.edit_button = button("Edit arguments", tooltip="Change the arguments, then approve")
        self.reject_button = button("Reject", style="danger", tooltip="Do not run the tool")
        self.actions = widgets.HBox([self.approve_button, self.edit_button, self.reject_button])
        self.settle_text = widgets.Text(
            placeholder="What happened? (empty: the outcome is unknown) The model sees this.",
            layout=widgets.Layout(width="60%"),
        )
        self.settle_text.add_class("agc-settle-text")
        self.settle_button = button(
            "Settle", style="warning", tooltip="Resolve this call with what happened"
        )
        self.settle_box = widgets.HBox(
            [self.settle_text, self.settle_button], layout=widgets.Layout(display=_HIDDEN)
        )
        self.settle_box.add_class("agc-settle")
        self.editor = widgets.Textarea(layout=widgets.Layout(width="100%", height="9em"))
        self.editor.add_class("agc-editor")
        self.send_edit_button = button("Approve with these arguments", style="success")
        self.cancel_edit_button = button("Cancel edit", tooltip="Keep the model's arguments")
        self.editor_box = widgets.VBox(
            [self.editor, widgets.HBox([self.send_edit_button, self.cancel_edit_button])],
            layout=widgets.Layout(display=_HIDDEN),
        )
        self.reason_text = widgets.Text(
            placeholder="Why not? The model sees this reason.",
            layout=widgets.Layout(width="60%"),
        )
        self.reason_text.add_class("agc-reason")
        self.send_reject_button = button("Confirm reject", style="danger")
        self.cancel_reject_button = button("Cancel", tooltip="Do not reject")
        self.reject_box = widgets.HBox(
            [self.reason_text, self.send_reject_button, self.cancel_reject_button],
            layout=widgets.Layout(display=_HIDDEN),
        )
        self.note_html = widgets.HTML()
        self.outcome_html = widgets.HTML()
        top = widgets.HBox([self.select_box, self.head_html])
        top.add_class("agc-call-top")
        body = widgets.HBox([self.args_html, self.time_html, self.actions])
        body.add_class("agc-call-body")
        super().__init__(
            [
                top,
                self.doubt_html,
                self.warning_html,
                body,
                self.settle_box,
                self.turn_html,
                self.editor_box,
                self.reject_box,
                self.note_html,
                self.outcome_html,
            ]
        )
        self.add_class("agc-call")

    @property
    def selected(self) -> bool:
        """Whether the call's box is ticked (and it can still be decided)."""
        return bool(self.select_box.value) and self.select_box.layout.display != _HIDDEN

    @property
    def editing(self) -> bool:
        """Whether the arguments editor is open."""
        return self.editor_box.layout.display != _HIDDEN

    @property
    def rejecting(self) -> bool:
        """Whether the reason box is open."""
        return self.reject_box.layout.display != _HIDDEN

    def open_editor(self, text: str) -> None:
        """Open the editor on ``text`` (kept as typed if it is open already)."""
        if not self.editing:
            self.editor.value = text
        self.close_reject()
        self.editor_box.layout.display = _SHOWN

    def close_editor(self) -> None:
        """Hide the editor."""
        self.editor_box.layout.display = _HIDDEN

    def open_reject(self) -> None:
        """Show the reason box."""
        self.close_editor()
        self.reject_box.layout.display = _SHOWN

    def close_reject(self) -> None:
        """Hide the reason box."""
        self.reject_box.layout.display = _HIDDEN

    def show(
        self,
        call: PendingToolCall,
        outcome: ApprovalOutcome | None,
        note: str | None,
        *,
        busy: bool,
        turn: str = "",
    ) -> None:
        """Show ``call`` with its outcome (decided) or its inline note (still pending or in
        doubt), and ``turn`` (the HTML of the turn that led to it) folded."""
        self.call = call
        waiting = call.status == "PENDING_APPROVAL" and outcome is None
        doubt = call.in_doubt and outcome is None
        _put(self.head_html, render_call_head(call))
        _put(self.doubt_html, render_doubt(call) if doubt else "")
        _put(self.warning_html, render_warning(call) if waiting else "")
        _put(self.args_html, render_arguments(call))
        _put(self.turn_html, turn)
        self.actions.layout.display = _SHOWN if waiting else _HIDDEN
        self.settle_box.layout.display = _SHOWN if doubt else _HIDDEN
        self.settle_button.disabled = busy or not doubt
        self.select_box.layout.display = "" if waiting else _HIDDEN
        self.select_box.disabled = busy
        if not waiting:
            self.select_box.value = False
        for b in (
            self.approve_button,
            self.edit_button,
            self.reject_button,
            self.send_edit_button,
            self.send_reject_button,
        ):
            b.disabled = busy or not waiting
        if not waiting:
            self.close_editor()
            self.close_reject()
        _put(
            self.note_html,
            f'<div class="agc-error agc-note-line">{escape(note)}</div>' if note else "",
        )
        _put(self.outcome_html, render_outcome(outcome))
        self.tick()
        if waiting or doubt:
            self.remove_class("agc-call-done")
        else:
            self.add_class("agc-call-done")
        if doubt:
            self.add_class("agc-call-doubt")
        else:
            self.remove_class("agc-call-doubt")

    def tick(self) -> None:
        """Refresh the time left (setting an unchanged value sends nothing)."""
        done = self.outcome_html.value != "" and self.call.status == "PENDING_APPROVAL"
        _put(self.time_html, "" if done else render_time_left(self.call))
