"""Test helpers shipped with agcore_lab, for its own tests and for new backends.

- :mod:`agcore_lab.testing.store_conformance`: the suite every ``Store`` backend must pass.

This package imports no test framework: the suite is plain functions and a base class that
pytest collects through a ``Test*`` subclass.
"""

from agcore_lab.testing.store_conformance import (
    CONFORMANCE_CHECKS,
    ConformanceFailure,
    StoreConformance,
    StoreFactory,
    run_store_conformance,
)

__all__ = [
    "CONFORMANCE_CHECKS",
    "ConformanceFailure",
    "StoreConformance",
    "StoreFactory",
    "run_store_conformance",
]
