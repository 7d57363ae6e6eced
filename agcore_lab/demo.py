"""The offline demo: ``python -m agcore_lab demo`` (or ``agcore-lab demo``).

Runs fully offline on ``ScriptedModel`` and a SQLite file in the working directory: a session
with tool calls, a fork into a second slot, a merge, an automatic summary, session memory, a
session tree with checkpoints, a fork from a checkpoint and a rollback, a tool call approved by
a person (from code), sub-agents dispatched in parallel, retrieval over a few notes (split,
embedded offline, stored in the same file), a knowledge graph with hybrid retrieval, and a
printed report.
Running it again adds new sessions to the same file (and says so); ``--fresh`` starts over.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agcore_lab.agent.agent import Agent
from agcore_lab.agent.bundle import RuntimeBundle
from agcore_lab.agent.session import AgentSession
from agcore_lab.agent.slots import MergeStrategy
from agcore_lab.agent.summary import SummaryConfig
from agcore_lab.engine.dispatch import DispatchConfig
from agcore_lab.engine.manager import SessionManager
from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.messages import ToolCall
from agcore_lab.llm.scripted import ScriptedModel, ScriptItem
from agcore_lab.llm.tools import Tool
from agcore_lab.llm.usage import ModelPrice, PriceTable
from agcore_lab.store.sqlite import SqliteStore

__all__ = ["DEFAULT_DB", "DemoReport", "run_demo"]

DEFAULT_DB = "agcore_demo.db"

# Illustrative prices so the report shows cost; ScriptedModel itself is free.
DEMO_PRICES = PriceTable({"scripted": ModelPrice(prompt=0.15, completion=0.60)})


def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a * b


def _demo_agent() -> Agent:
    script: list[ScriptItem] = [
        ToolCall(name="add", arguments={"a": 1200, "b": 345}),
        "1200 + 345 = 1545.",
        ToolCall(name="multiply", arguments={"a": 1545, "b": 2}),
        "Doubled, that is 3090.",
        "Split three ways, 1545 is 515 each.",
        "Noted: we keep the doubled figure, 3090.",
    ]
    summarizer = ScriptedModel(
        ["The user is budgeting: 1200 + 345 = 1545, doubled to 3090; a 3-way split gives 515."]
    )
    return Agent(
        name="calculator",
        system_prompt="You are a careful calculator. Use the tools for arithmetic.",
        model=ScriptedModel(script),
        tools=[add, multiply],
        summary_config=SummaryConfig(
            max_context_tokens=200, trigger_token_ratio=0.5, summary_model=summarizer
        ),
    )


@dataclass
class DemoReport:
    """What the demo did, for the printed report and for tests."""

    db_path: str
    session_id: str
    replies: list[str] = field(default_factory=list)
    tool_calls: list[str] = field(default_factory=list)
    slots: dict[str, int] = field(default_factory=dict)
    summary: str | None = None
    memory_keys: list[str] = field(default_factory=list)
    main_mode: str = "full"
    tree_sizes: list[int] = field(default_factory=list)
    checkpoints: int = 0
    fork_reply: str = ""
    approval_reply: str = ""
    dispatched: int = 0
    rag_chunks: int = 0
    graph_related: int = 0
    graph_strategy: str = ""
    rag_answers: dict[str, list[str]] = field(default_factory=dict)
    turns: int = 0
    tokens: int = 0
    cost: float = 0.0
    sessions_in_store: int = 0


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _warm_retrieval() -> None:
    # scikit-learn takes seconds to import the first time: load it while the first steps run.
    try:
        import sklearn.feature_extraction.text  # noqa: F401
    except ImportError:  # pragma: no cover - a core dependency; step 8 will say what is wrong
        pass


def remove_database(db_path: str | Path) -> bool:
    """Delete a SQLite file and its WAL side files; ``True`` if there was one.

    Raises:
        InvalidInputError: The file is not a SQLite database (it is left alone).
    """
    path = Path(db_path)
    existed = path.exists()
    if existed and path.stat().st_size:
        with path.open("rb") as file:
            if file.read(16) != b"SQLite format 3\x00":
                raise InvalidInputError(
                    f"{str(path)!r} is not a SQLite database; --fresh only deletes databases"
                )
    for extra in ("", "-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)
    return existed


def _open_store(url: str) -> SqliteStore:
    from agcore_lab.store.open import open_store

    store = open_store(url)
    assert isinstance(store, SqliteStore)  # SqliteStore or PostgresStore (its subclass)
    return store


def run_demo(
    db_path: str | Path = DEFAULT_DB,
    *,
    out: Callable[[str], None] = print,
    fresh: bool = False,
    store_url: str | None = None,
) -> DemoReport:
    """Run the demo story against ``db_path`` and print a report through ``out``.

    Args:
        db_path: The SQLite file (created when missing).
        out: Where the printed lines go.
        fresh: Delete ``db_path`` first; otherwise a re-run appends new sessions to it.
        store_url: Run on this store instead (``postgresql://...``, ``sqlite:///PATH``; see
            :func:`~agcore_lab.store.open.open_store`), appending to what it holds.

    Raises:
        InvalidInputError: ``fresh`` with ``store_url`` (only a ``db_path`` file is deleted).
    """
    if fresh and store_url is not None:
        raise InvalidInputError(
            "--fresh deletes the --db file; with --store, give an empty store instead "
            "(for PostgreSQL, a new ?schema=NAME)"
        )
    warm = threading.Thread(target=_warm_retrieval, name="agcore-demo-warm", daemon=True)
    warm.start()
    if fresh:
        remove_database(db_path)
    store = SqliteStore(db_path) if store_url is None else _open_store(store_url)
    if store_url is not None:
        db_path = store.path
    earlier = len(store.list_sessions())
    session = AgentSession(_demo_agent(), bundle=RuntimeBundle(store=store, prices=DEMO_PRICES))
    report = DemoReport(db_path=str(db_path), session_id=session.session_id)
    out(f"agcore_lab demo - session {session.session_id} in {db_path}")
    if earlier:
        out(
            f"  (appending: {db_path} already holds {_plural(earlier, 'session')} from earlier "
            "runs; run with --fresh to start from an empty database)"
        )

    def turn(text: str) -> None:
        result = session.submit_turn_sync(text)
        calls = [f"{c.name}({c.arguments})" for c in result.tool_calls]
        report.replies.append(result.reply)
        report.tool_calls.extend(calls)
        used = f"  [tools: {', '.join(calls)}]" if calls else ""
        slot = session.current_slot_id
        out(f"  [{slot}] you: {text}\n  [{slot}] agent: {result.reply}{used}")

    # Focused: the automatic summary becomes the main slot's override (a Full slot keeps
    # sending everything and only gets the summary in memory).
    session.set_slot_mode_sync("focused", recent_window=6)
    out("\n1. A turn with a tool call")
    turn("What is 1200 + 345?")
    session.session_memory.set("currency", "EUR", {"source": "demo"})

    out("\n2. Fork the conversation into a second slot and try something there")
    session.fork_slot_sync("what-if", switch=True)
    turn("What if we double it?")

    out("\n3. Meanwhile, on the main slot")
    session.switch_slot_sync("main")
    turn("And split three ways?")

    out("\n4. Merge the what-if slot back (Append)")
    preview = session.merge_preview("what-if", into="main", strategy=MergeStrategy.Append)
    out(f"  {preview.describe()}")
    session.merge_slot_sync("what-if", into="main", strategy=MergeStrategy.Append)
    turn("Which figure do we keep?")

    report.summary = session.get_conversation_summary()
    report.main_mode = session.slots["main"].mode.value
    report.slots = {sid: len(slot.messages) for sid, slot in session.slots.items()}
    report.memory_keys = [entry.key for entry in session.session_memory.list_entries()]
    report.turns = session.turn_index
    report.tokens = session.usage.total_tokens
    report.cost = session.cost_so_far
    _time_travel(store, report, out)
    _approval_and_dispatch(store, report, out)
    out("\n8. Retrieval over a few notes")
    if warm.is_alive():
        out("  (loading scikit-learn for the offline embedding - first use only...)")
    warm.join()
    from agcore_lab.rag.demo_step import rag_demo_step  # lazy: scikit-learn loads here

    rag = rag_demo_step(store, out)
    report.rag_chunks, report.rag_answers = rag["chunks"], rag["answers"]
    _graph_step(store, report, out)
    report.sessions_in_store = len(store.list_sessions())
    store.close()

    out("\n10. Report")
    calls = _plural(len(report.tool_calls), "tool call")
    out(f"  calculator: {_plural(report.turns, 'turn')}, {calls}")
    out("  slots: " + ", ".join(f"{k} ({v} messages)" for k, v in report.slots.items()))
    out(f"  automatic summary: {report.summary or '(none yet)'}")
    out(f"  main slot mode: {report.main_mode} (focused: it sends the summary and a recent window)")
    out(f"  memory keys: {', '.join(report.memory_keys)}")
    out(f"  tokens: {report.tokens}   cost: ${report.cost:.6f} (illustrative prices)")
    size, forks = report.tree_sizes
    out(
        f"  session tree: {_plural(size, 'session')} (the writer and "
        f"{_plural(forks, 'fork')})   checkpoints of the writer: {report.checkpoints} "
        f"({report.checkpoints - 1} automatic + 1 rollback marker)"
    )
    out(f"  approved transfer: {report.approval_reply}   sub-agent results: {report.dispatched}")
    out(f"  chunks in the vector store: {report.rag_chunks}")
    out(f"  graph: {report.graph_related} related to 'agcore_lab'")
    out(f"  retrieval strategy that ran: {report.graph_strategy}")
    out(f"  sessions in {db_path}: {report.sessions_in_store}")
    return report


def transfer(to: str, amount: int) -> str:
    """Move money (needs a person's approval).

    Args:
        to: The recipient.
        amount: How much.
    """
    return f"sent {amount} to {to}"


def _approval_and_dispatch(
    store: SqliteStore, report: DemoReport, out: Callable[[str], None]
) -> None:
    manager = SessionManager(store)
    out("\n6. A tool call that waits for a person's approval")
    bank = Agent(
        name="bank",
        model=ScriptedModel(
            [ToolCall(name="transfer", arguments={"to": "u2", "amount": 100}), "Done."]
        ),
        tools=[Tool.from_function(transfer, requires_approval=True, approval_timeout=3600)],
    )
    sid = manager.create_sync(bank)
    result = manager.submit_turn_sync(sid, "Send 100 to u2")
    call = result.pending_tool_call
    assert call is not None
    out(f"  turn {result.status}: {call.tool_name}({call.tool_args}) is {call.status}")
    final = manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    out(
        f"  approved from code -> tool said {final.tool_results[0].content!r}; reply: {final.reply}"
    )
    report.approval_reply = final.reply

    out("\n7. Sub-agents: one task split across five workers, three at a time")
    lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
    worker = Agent(
        name="researcher",
        model=ScriptedModel(lambda messages: f"notes on {messages[-1].text}", latency=0.02),
    )
    topics = ["batteries", "solar", "wind", "hydro", "grid"]
    results = manager.dispatch_all_sync(
        lead, [(worker, topic) for topic in topics], DispatchConfig(max_concurrency=3)
    )
    for topic, item in zip(topics, results, strict=True):
        out(f"  {topic}: {getattr(item, 'response', item)}")
    progress = manager.last_dispatch
    peak = progress.peak_running if progress is not None else 0
    out(f"  {len(manager.children_sync(lead))} child sessions, at most {peak} running at once")
    report.dispatched = sum(1 for item in results if not isinstance(item, Exception))


def _time_travel(store: SqliteStore, report: DemoReport, out: Callable[[str], None]) -> None:
    out("\n5. A session tree with time travel (SessionManager + Checkpointer)")
    manager = SessionManager(store)
    writer = Agent(
        name="writer",
        model=ScriptedModel(["Draft one.", "Draft two.", "Draft three.", "A better draft two."]),
    )
    sid = manager.create_sync(writer)
    for i in (1, 2, 3):
        manager.submit_turn_sync(sid, f"Write draft {i}")
    checkpoints = manager.checkpointer.list_checkpoints_sync(sid)  # newest first
    out(
        f"  {len(checkpoints)} checkpoints, newest first: "
        + ", ".join(f"turn {c.turn_index} ({c.source})" for c in checkpoints)
    )
    after_two = next(c for c in checkpoints if c.turn_index == 2)
    child = manager.checkpointer.fork_sync(sid, after_two.ckpt_id)
    reply = manager.submit_turn_sync(child, "Rewrite draft two").reply
    out(f"  forked at turn 2 into {child}; the fork answers: {reply}")
    first = next(c for c in checkpoints if c.turn_index == 1)
    manager.checkpointer.rollback_sync(sid, first.ckpt_id)
    session = manager.get_sync(sid)
    after = manager.checkpointer.list_checkpoints_sync(sid)
    out(
        f"  rolled the writer back to turn {first.turn_index}: "
        f"{_plural(len(session.messages), 'message')}; it now has {len(after)} checkpoints "
        f"({len(checkpoints)} automatic + 1 rollback marker)"
    )
    tree = manager.tree_sync(sid)
    for depth, node in tree.walk():
        turns = _plural(node.turn_index, "turn")
        out(f"  {'  ' * depth}- {node.session_id} ({node.agent_name}, {turns})")
    report.tree_sizes = [len(manager.tree_sync(sid)), len(manager.children_sync(sid))]
    report.checkpoints = len(manager.checkpointer.list_checkpoints_sync(sid))
    report.fork_reply = reply


def _graph_step(store: SqliteStore, report: DemoReport, out: Callable[[str], None]) -> None:
    # Lazy: networkx and scikit-learn load here, not at `import agcore_lab`.
    from agcore_lab.kg import (
        GraphEntity,
        GraphRelation,
        KnowledgeStore,
        MemoryRetriever,
        open_graph,
    )

    out("\n9. A knowledge graph beside the documents, and hybrid retrieval")
    graph = open_graph(store, "demo")
    entities = {
        "agcore_lab": "library",
        "sqlite": "storage",
        "checkpoint": "concept",
        "jupyter": "tool",
    }
    for entity_id, kind in entities.items():
        graph.add_entity_sync(GraphEntity(id=entity_id, name=entity_id, entity_type=kind))
    for source, target, kind, weight in [
        ("agcore_lab", "sqlite", "stores_in", 0.9),
        ("agcore_lab", "jupyter", "shows_in", 0.8),
        ("sqlite", "checkpoint", "holds", 0.7),
    ]:
        graph.add_relation_sync(
            GraphRelation(source=source, target=target, relation_type=kind, weight=weight)
        )
    related = graph.get_related_sync("agcore_lab", depth=2)
    for item in related:
        path = " > ".join(item.path)
        out(f"  {item.entity.id:<11} score {item.score:.2f}  via {path}")
    knowledge = KnowledgeStore()
    knowledge.add("ckpt-note", "A checkpoint records slot heads, never a copy of the history.")
    result = MemoryRetriever(knowledge, graph).retrieve_sync("checkpoint", k=3)
    out(f"  hybrid retrieval for 'checkpoint' ({result.strategy.value}):")
    for hit in result.items:
        out(f"    {hit.kind:<9} {hit.id:<11} {hit.score():.2f}")
    report.graph_related = len(related)
    report.graph_strategy = result.strategy.value
