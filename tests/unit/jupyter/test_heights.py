"""Every view has a fixed maximum height (600 px): what does not fit scrolls or pages inside."""

from __future__ import annotations

from typing import Any

from agcore_lab import Agent, DispatchConfig, ScriptedModel, SessionManager
from agcore_lab.jupyter import (
    ApprovalPanel,
    CheckpointTimeline,
    ChunkInspector,
    DispatchMonitor,
    GraphExplorer,
    SessionTreeBrowser,
    SlotDiffViewer,
)
from agcore_lab.jupyter.common.text import MAX_HEIGHT
from agcore_lab.kg import GraphEntity, InMemoryGraph


def _capped(view: Any) -> None:
    try:
        assert MAX_HEIGHT == 600
        assert view.layout.max_height == "600px", type(view).__name__
        assert view.layout.overflow_y == "auto", type(view).__name__
    finally:
        view.close()


def test_every_view_is_capped() -> None:
    agent = Agent(name="writer", model=ScriptedModel())
    manager = SessionManager(agents=[agent])
    sid = manager.create_sync(agent)
    manager.submit_turn_sync(sid, "hello")
    session = manager.get_sync(sid)
    session.fork_slot_sync("alt")
    graph = InMemoryGraph()
    graph.add_entity_sync(GraphEntity(id="ada"))
    monitor = DispatchMonitor(
        manager, sid, [(agent, "one")], DispatchConfig(), display=False, tree=True
    )
    assert monitor.wait(30)
    assert monitor.tree_browser is not None
    _capped(monitor.tree_browser)
    for view in (
        SessionTreeBrowser(manager),
        CheckpointTimeline(manager, sid),
        ApprovalPanel(manager, tick=None),
        monitor,
        SlotDiffViewer(session, "main", "alt"),
        ChunkInspector("word " * 5000, chunk_size=20, chunk_overlap=0),
        GraphExplorer(graph),
    ):
        _capped(view)
