"""Kept so ``from agcore_lab.jupyter.timeline import CheckpointTimeline`` keeps working; the
view lives in :mod:`agcore_lab.jupyter.history`."""

from __future__ import annotations

from agcore_lab.jupyter.history.timeline import CheckpointTimeline

__all__ = ["CheckpointTimeline"]
