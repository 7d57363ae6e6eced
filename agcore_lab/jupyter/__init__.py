"""Jupyter views and magics for agcore_lab — the only package that imports IPython/ipywidgets.

``%load_ext agcore_lab`` registers the ``%agcore`` magics (:mod:`agcore_lab.jupyter.magics`).
Widgets load on first use, so loading the extension stays fast::

    from agcore_lab.jupyter import (ApprovalPanel, CheckpointTimeline, DispatchMonitor,
                                    SessionTreeBrowser, SlotDiffViewer)
    SlotDiffViewer(session, "main", "alt")
    SessionTreeBrowser(manager)
    CheckpointTimeline(manager, session_id)
    ApprovalPanel(manager)
    monitor = DispatchMonitor(manager, parent_id, tasks, config)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agcore_lab.jupyter.approval_panel import ApprovalPanel
    from agcore_lab.jupyter.diff_viewer import SlotDiffViewer
    from agcore_lab.jupyter.dispatch_monitor import DispatchMonitor
    from agcore_lab.jupyter.magics import AgcoreMagics
    from agcore_lab.jupyter.timeline import CheckpointTimeline
    from agcore_lab.jupyter.tree_browser import SessionTreeBrowser

__all__ = [
    "AgcoreMagics",
    "ApprovalPanel",
    "CheckpointTimeline",
    "DispatchMonitor",
    "SessionTreeBrowser",
    "SlotDiffViewer",
    "load_ipython_extension",
]


def __getattr__(name: str) -> Any:
    if name == "ApprovalPanel":
        from agcore_lab.jupyter.approval_panel import ApprovalPanel

        return ApprovalPanel
    if name == "DispatchMonitor":
        from agcore_lab.jupyter.dispatch_monitor import DispatchMonitor

        return DispatchMonitor
    if name == "SessionTreeBrowser":
        from agcore_lab.jupyter.tree_browser import SessionTreeBrowser

        return SessionTreeBrowser
    if name == "CheckpointTimeline":
        from agcore_lab.jupyter.timeline import CheckpointTimeline

        return CheckpointTimeline
    if name == "SlotDiffViewer":
        from agcore_lab.jupyter.diff_viewer import SlotDiffViewer

        return SlotDiffViewer
    if name == "AgcoreMagics":
        from agcore_lab.jupyter.magics import AgcoreMagics

        return AgcoreMagics
    raise AttributeError(f"module 'agcore_lab.jupyter' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext agcore_lab.jupyter``: the same as ``%load_ext agcore_lab``."""
    from agcore_lab.jupyter.magics import load_ipython_extension as _load

    _load(ipython)
