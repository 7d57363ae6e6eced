"""agcore_lab: a Jupyter-first research toolkit for LLM agents.

Sessions with context slots that fork and merge, session memory and automatic summaries, kept
in SQLite; every piece can be seen and steered in a notebook (``%load_ext agcore_lab``).

Importing this package never imports IPython, ipywidgets, traitlets or pyvis; those load with
``agcore_lab.jupyter`` or ``%load_ext agcore_lab``. ``OpenAIChatModel`` (httpx) loads lazily.
"""

from typing import TYPE_CHECKING, Any

from agcore_lab.agent import (
    Agent,
    AgentSession,
    ContextSlot,
    MergePreview,
    MergeStrategy,
    RuntimeBundle,
    SessionMemory,
    SlotDiff,
    SlotMode,
    SummaryConfig,
    ToolCallStarted,
    ToolResultReady,
    TurnDone,
    TurnResult,
    diff_slots,
)
from agcore_lab.agent.approval import Approve, Reject
from agcore_lab.agent.recording import redact_tool_results
from agcore_lab.engine import (
    AgentNotFoundError,
    Checkpointer,
    CheckpointNotFoundError,
    CheckpointPreview,
    ChildCreated,
    Completed,
    DispatchConfig,
    DispatchError,
    DispatchFailed,
    DispatchProgress,
    ManagerEvent,
    PruneReport,
    SessionManager,
    SessionManagerConfig,
    SessionNode,
    SessionSnapshot,
    SessionTree,
    SharedMemory,
    SubTaskError,
    SubTaskResult,
    current_shared_memory,
)
from agcore_lab.engine.calls import CallNotFoundError
from agcore_lab.errors import (
    AgcoreError,
    ConfigurationError,
    ConflictError,
    CorruptRecordError,
    GoneError,
    InvalidInputError,
    MaxToolRoundsError,
    ModelError,
    NotFoundError,
    SessionBusyError,
    SessionNotFoundError,
    SlotNotFoundError,
    StaleSessionError,
    StorageError,
    UnprocessableError,
    UserError,
)
from agcore_lab.llm import (
    AssistantMessage,
    ChatModel,
    ChatResponse,
    CostTracker,
    Message,
    ModelPrice,
    PriceTable,
    ScriptedModel,
    SystemMessage,
    TextDelta,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolMessage,
    Usage,
    UserMessage,
)
from agcore_lab.llm.call_record import ModelCall
from agcore_lab.llm.replay import ReplayMissError, ReplayModel
from agcore_lab.store import CkptMeta, SqliteStore, Store
from agcore_lab.store._approvals import RunNotFoundError
from agcore_lab.store.aio import AsyncStore
from agcore_lab.store.open import open_store
from agcore_lab.store.pending import PendingToolCall, SessionState
from agcore_lab.store.threaded import ThreadedAsyncStore, as_async

if TYPE_CHECKING:
    from agcore_lab.kg import (
        EntityNotFoundError,
        GraphEntity,
        GraphRelation,
        InMemoryGraph,
        KnowledgeEntry,
        KnowledgeGraph,
        KnowledgeStore,
        MemoryRetriever,
        PostgresGraph,
        RelationDirection,
        RetrievalItem,
        RetrievalResult,
        RetrievalStrategy,
        RetrieverConfig,
        ScoredEntity,
        SqliteGraph,
        TagConstraints,
        from_triples,
        open_graph,
        search_memory_tool,
    )
    from agcore_lab.llm.openai import OpenAIChatModel
    from agcore_lab.rag import (
        Document,
        HashingEmbedding,
        InMemoryVectorStore,
        MockEmbedding,
        OpenAIEmbedding,
        PostgresVectorStore,
        RagPipeline,
        RecursiveCharacterSplitter,
        SentenceTransformerEmbedding,
        SqliteVectorStore,
        open_vector_store,
    )

# Loaded on first use: numpy (and, when used, scikit-learn or httpx) stay out of the import.
_LAZY_RAG = frozenset(
    {
        "Document",
        "HashingEmbedding",
        "InMemoryVectorStore",
        "MockEmbedding",
        "OpenAIEmbedding",
        "PostgresVectorStore",
        "RagPipeline",
        "RecursiveCharacterSplitter",
        "SentenceTransformerEmbedding",
        "SqliteVectorStore",
        "open_vector_store",
    }
)

# Loaded on first use: networkx (and pandas, when used) stay out of the import.
_LAZY_KG = frozenset(
    {
        "EntityNotFoundError",
        "GraphEntity",
        "GraphRelation",
        "InMemoryGraph",
        "KnowledgeEntry",
        "KnowledgeGraph",
        "KnowledgeStore",
        "MemoryRetriever",
        "PostgresGraph",
        "RelationDirection",
        "RetrievalItem",
        "RetrievalResult",
        "RetrievalStrategy",
        "RetrieverConfig",
        "ScoredEntity",
        "SqliteGraph",
        "TagConstraints",
        "from_triples",
        "open_graph",
        "search_memory_tool",
    }
)

__version__ = "0.1.0"

__all__ = [
    "AgcoreError",
    "Agent",
    "AgentNotFoundError",
    "AgentSession",
    "Approve",
    "AssistantMessage",
    "AsyncStore",
    "CallNotFoundError",
    "ChatModel",
    "ChatResponse",
    "CheckpointNotFoundError",
    "CheckpointPreview",
    "Checkpointer",
    "ChildCreated",
    "CkptMeta",
    "Completed",
    "ConfigurationError",
    "ConflictError",
    "ContextSlot",
    "CorruptRecordError",
    "CostTracker",
    "DispatchConfig",
    "DispatchError",
    "DispatchFailed",
    "DispatchProgress",
    "Document",
    "EntityNotFoundError",
    "GoneError",
    "GraphEntity",
    "GraphRelation",
    "HashingEmbedding",
    "InMemoryGraph",
    "InMemoryVectorStore",
    "InvalidInputError",
    "KnowledgeEntry",
    "KnowledgeGraph",
    "KnowledgeStore",
    "ManagerEvent",
    "MaxToolRoundsError",
    "MemoryRetriever",
    "MergePreview",
    "MergeStrategy",
    "Message",
    "MockEmbedding",
    "ModelCall",
    "ModelError",
    "ModelPrice",
    "NotFoundError",
    "OpenAIChatModel",
    "OpenAIEmbedding",
    "PendingToolCall",
    "PostgresGraph",
    "PostgresVectorStore",
    "PriceTable",
    "PruneReport",
    "RagPipeline",
    "RecursiveCharacterSplitter",
    "Reject",
    "RelationDirection",
    "ReplayMissError",
    "ReplayModel",
    "RetrievalItem",
    "RetrievalResult",
    "RetrievalStrategy",
    "RetrieverConfig",
    "RunNotFoundError",
    "RuntimeBundle",
    "ScoredEntity",
    "ScriptedModel",
    "SentenceTransformerEmbedding",
    "SessionBusyError",
    "SessionManager",
    "SessionManagerConfig",
    "SessionMemory",
    "SessionNode",
    "SessionNotFoundError",
    "SessionSnapshot",
    "SessionState",
    "SessionTree",
    "SharedMemory",
    "SlotDiff",
    "SlotMode",
    "SlotNotFoundError",
    "SqliteGraph",
    "SqliteStore",
    "SqliteVectorStore",
    "StaleSessionError",
    "StorageError",
    "Store",
    "SubTaskError",
    "SubTaskResult",
    "SummaryConfig",
    "SystemMessage",
    "TagConstraints",
    "TextDelta",
    "ThreadedAsyncStore",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallStarted",
    "ToolMessage",
    "ToolResultReady",
    "TurnDone",
    "TurnResult",
    "UnprocessableError",
    "Usage",
    "UserError",
    "UserMessage",
    "__version__",
    "as_async",
    "current_shared_memory",
    "diff_slots",
    "from_triples",
    "load_ipython_extension",
    "open_graph",
    "open_store",
    "open_vector_store",
    "redact_tool_results",
    "search_memory_tool",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIChatModel":
        from agcore_lab.llm.openai import OpenAIChatModel

        return OpenAIChatModel
    if name in _LAZY_RAG:
        from agcore_lab import rag

        return getattr(rag, name)
    if name in _LAZY_KG:
        from agcore_lab import kg

        return getattr(kg, name)
    raise AttributeError(f"module 'agcore_lab' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext agcore_lab``: register the ``%agcore`` / ``%%agcore`` magics."""
    from agcore_lab.jupyter.magics import load_ipython_extension as _load

    _load(ipython)
