"""The call inspector: what the model saw, call by call (:class:`CallInspector`)."""

from __future__ import annotations

from agcore_lab.jupyter.calls.inspector import CallInspector

__all__ = ["CallInspector"]
