"""Worker functions for the dispatch crash test (importable by ``spawn``-started processes:
the test adds this directory to ``sys.path``, which spawned children inherit)."""

from __future__ import annotations

from agcore_lab import Agent, DispatchConfig, RuntimeBundle, ScriptedModel, SessionManager
from agcore_lab.store.sqlite import SqliteStore

LEASE = 0.6  # seconds: a killed dispatch's leases run out soon


def worker(latency: float) -> Agent:
    """The children's agent: answers ``ok`` after ``latency`` seconds."""
    return Agent(name="worker", model=ScriptedModel(lambda messages: "ok", latency=latency))


def manager_for(path: str, latency: float) -> SessionManager:
    """A manager on ``path`` whose leases last :data:`LEASE` seconds."""
    bundle = RuntimeBundle(store=SqliteStore(path), lease_seconds=LEASE)
    return SessionManager(bundle=bundle, agents=[worker(latency), Agent(name="lead")])


def dispatch_forever(path: str, lead: str, tasks: int) -> None:
    """Dispatch ``tasks`` children of ``lead`` (2 at a time) until the process is killed."""
    manager = manager_for(path, latency=0.05)
    agent = manager.agents["worker"]
    manager.dispatch_all_sync(
        lead, [(agent, f"task {i}") for i in range(tasks)], DispatchConfig(max_concurrency=2)
    )
