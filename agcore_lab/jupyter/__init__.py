"""Jupyter views and magics for agcore_lab — the only package that imports IPython/ipywidgets.

``%load_ext agcore_lab`` registers the ``%agcore`` magics (:mod:`agcore_lab.jupyter.magics`).
Widgets load on first use, so loading the extension stays fast::

    from agcore_lab.jupyter import (ApprovalPanel, CheckpointTimeline, ChunkInspector,
                                    DispatchMonitor, SessionTreeBrowser, SlotDiffViewer)
    SlotDiffViewer(session, "main", "alt")
    SessionTreeBrowser(manager)
    CheckpointTimeline(manager, session_id)
    ApprovalPanel(manager)
    monitor = DispatchMonitor(manager, parent_id, tasks, config)
    ChunkInspector(text)
    GraphExplorer(graph)          # explorer.to_pyvis(), or graph_to_pyvis(graph)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agcore_lab.jupyter.approval.panel import ApprovalPanel
    from agcore_lab.jupyter.calls import CallInspector
    from agcore_lab.jupyter.chunks.inspector import ChunkInspector
    from agcore_lab.jupyter.diff.viewer import SlotDiffViewer
    from agcore_lab.jupyter.dispatch.monitor import DispatchMonitor
    from agcore_lab.jupyter.graph.explorer import GraphExplorer
    from agcore_lab.jupyter.graph.export import graph_to_pyvis
    from agcore_lab.jupyter.history import CheckpointTimeline
    from agcore_lab.jupyter.ingest_progress import IngestProgressBar
    from agcore_lab.jupyter.magics import AgcoreMagics
    from agcore_lab.jupyter.tree.browser import SessionTreeBrowser

__all__ = [
    "AgcoreMagics",
    "ApprovalPanel",
    "CallInspector",
    "CheckpointTimeline",
    "ChunkInspector",
    "DispatchMonitor",
    "GraphExplorer",
    "IngestProgressBar",
    "SessionTreeBrowser",
    "SlotDiffViewer",
    "graph_to_pyvis",
    "load_ipython_extension",
]

# Public name -> the module that defines it, imported on first access.
_LAZY = {
    "AgcoreMagics": "magics",
    "ApprovalPanel": "approval.panel",
    "CallInspector": "calls",
    "CheckpointTimeline": "history",
    "ChunkInspector": "chunks.inspector",
    "DispatchMonitor": "dispatch.monitor",
    "GraphExplorer": "graph.explorer",
    "IngestProgressBar": "ingest_progress",
    "SessionTreeBrowser": "tree.browser",
    "SlotDiffViewer": "diff.viewer",
    "graph_to_pyvis": "graph.export",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"agcore_lab.jupyter.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'agcore_lab.jupyter' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext agcore_lab.jupyter``: the same as ``%load_ext agcore_lab``."""
    from agcore_lab.jupyter.magics import load_ipython_extension as _load

    _load(ipython)
