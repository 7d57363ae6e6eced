"""Suite-wide settings."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Browser tests last: they are the slowest, and the fast suites should fail first.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
