"""Test helpers shipped with agcore_lab, for its own tests and for new backends.

- :mod:`agcore_lab.testing.store_conformance`: the suite every ``Store`` backend must pass.
- :mod:`agcore_lab.testing.graph_conformance`: the suite every ``KnowledgeGraph`` backend must
  pass.
- :mod:`agcore_lab.testing.vector_conformance`: the suite every ``VectorStore`` backend must pass.
- :mod:`agcore_lab.testing.persistence_conformance`: what persisted vector stores and graphs
  must also do (re-open, other processes), run per store URL.

This package imports no test framework: the suite is plain functions and a base class that
pytest collects through a ``Test*`` subclass.
"""

from agcore_lab.testing.graph_conformance import (
    GRAPH_CHECKS,
    GraphConformance,
    GraphConformanceFailure,
    GraphFactory,
    run_graph_conformance,
)
from agcore_lab.testing.persistence_conformance import (
    PERSISTENCE_CHECKS,
    PersistenceConformance,
    PersistenceConformanceFailure,
    run_persistence_conformance,
)
from agcore_lab.testing.store_conformance import (
    CONFORMANCE_CHECKS,
    ConformanceFailure,
    StoreConformance,
    StoreFactory,
    run_store_conformance,
)
from agcore_lab.testing.vector_conformance import (
    VECTOR_CHECKS,
    VectorConformance,
    VectorConformanceFailure,
    VectorFactory,
    run_vector_conformance,
)

__all__ = [
    "CONFORMANCE_CHECKS",
    "GRAPH_CHECKS",
    "PERSISTENCE_CHECKS",
    "VECTOR_CHECKS",
    "ConformanceFailure",
    "GraphConformance",
    "GraphConformanceFailure",
    "GraphFactory",
    "PersistenceConformance",
    "PersistenceConformanceFailure",
    "StoreConformance",
    "StoreFactory",
    "VectorConformance",
    "VectorConformanceFailure",
    "VectorFactory",
    "run_graph_conformance",
    "run_persistence_conformance",
    "run_store_conformance",
    "run_vector_conformance",
]
