"""Suite-wide settings, and the PostgreSQL server the PostgreSQL tests share."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Browser tests last: they are the slowest, and the fast suites should fail first.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


def _unavailable(reason: str) -> None:
    # CI sets AGCORE_REQUIRE_POSTGRES=1: there a missing server is a failure, not a skip.
    if os.environ.get("AGCORE_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PostgreSQL is required here (AGCORE_REQUIRE_POSTGRES=1): {reason}")
    pytest.skip(f"no PostgreSQL server: {reason}")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server for the whole run: ``AGCORE_TEST_POSTGRES_URL`` if set, else a
    throwaway one started from Debian's server binaries (stopped at the end)."""
    given = os.environ.get("AGCORE_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable('psycopg is not installed (pip install -e ".[dev]")')
    from agcore_lab.testing.postgres_server import PostgresUnavailable, TemporaryPostgres

    server = TemporaryPostgres()
    try:
        url = server.start()
    except PostgresUnavailable as exc:
        server.stop()
        _unavailable(str(exc))
    try:
        yield url
    finally:
        server.stop()
