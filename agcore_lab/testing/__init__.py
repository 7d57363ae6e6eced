"""Test helpers shipped with agcore_lab, for its own tests and for new backends.

- :mod:`agcore_lab.testing.store_conformance`: the suite every ``Store`` backend must pass.
- :mod:`agcore_lab.testing.graph_conformance`: the suite every ``KnowledgeGraph`` backend must
  pass.

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
from agcore_lab.testing.store_conformance import (
    CONFORMANCE_CHECKS,
    ConformanceFailure,
    StoreConformance,
    StoreFactory,
    run_store_conformance,
)

__all__ = [
    "CONFORMANCE_CHECKS",
    "GRAPH_CHECKS",
    "ConformanceFailure",
    "GraphConformance",
    "GraphConformanceFailure",
    "GraphFactory",
    "StoreConformance",
    "StoreFactory",
    "run_graph_conformance",
    "run_store_conformance",
]
