"""The engine: the session tree (``SessionManager``) and time travel (``Checkpointer``)."""

from agcore_lab.engine.checkpointer import Checkpointer, CheckpointNotFoundError
from agcore_lab.engine.dispatch import (
    ChildCreated,
    Completed,
    DispatchConfig,
    DispatchError,
    DispatchProgress,
    SharedMemory,
    SubTaskError,
    SubTaskResult,
    current_shared_memory,
)
from agcore_lab.engine.dispatch_types import DispatchFailed
from agcore_lab.engine.manager import AgentNotFoundError, SessionManager
from agcore_lab.engine.manager_config import SessionManagerConfig
from agcore_lab.engine.records import (
    CheckpointPreview,
    ManagerEvent,
    PruneReport,
    SessionNode,
    SessionTree,
)
from agcore_lab.engine.snapshot import SessionSnapshot

__all__ = [
    "AgentNotFoundError",
    "CheckpointNotFoundError",
    "CheckpointPreview",
    "Checkpointer",
    "ChildCreated",
    "Completed",
    "DispatchConfig",
    "DispatchError",
    "DispatchFailed",
    "DispatchProgress",
    "ManagerEvent",
    "PruneReport",
    "SessionManager",
    "SessionManagerConfig",
    "SessionNode",
    "SessionSnapshot",
    "SessionTree",
    "SharedMemory",
    "SubTaskError",
    "SubTaskResult",
    "current_shared_memory",
]
