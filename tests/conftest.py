"""Suite-wide settings, and the PostgreSQL server the PostgreSQL tests share.

- Browser tests run last.
- No real model HTTP call leaves the machine: every httpx request to a host other than the
  loopback servers of the integration tests fails the test (``_no_real_model_calls``).
- Child processes (notebook kernels under nbval, worker processes, JupyterLab) get a
  ``TMPDIR`` of their own for this run, removed when the run ends, so a test run leaves no
  temporary directories behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
_RUN_TMP_KEY = "AGCORE_TEST_RUN_TMPDIR"


class RealModelCallError(RuntimeError):
    """A test tried to reach a model endpoint that is not a loopback test server."""


def _check(request: httpx.Request) -> None:
    if request.url.host not in LOOPBACK:
        raise RealModelCallError(
            f"a real model HTTP call to {request.url.host!r} was blocked: tests use "
            "ScriptedModel or a loopback server (tests/integration/conftest.py)"
        )


@pytest.fixture(autouse=True)
def _no_real_model_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    sync_send = httpx.HTTPTransport.handle_request
    async_send = httpx.AsyncHTTPTransport.handle_async_request

    def guarded(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
        _check(request)
        return sync_send(self, request)

    async def guarded_async(self: httpx.AsyncHTTPTransport, request: httpx.Request) -> Any:
        _check(request)
        return await async_send(self, request)

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", guarded)
    monkeypatch.setattr(httpx.AsyncHTTPTransport, "handle_async_request", guarded_async)


def pytest_configure(config: pytest.Config) -> None:
    tempfile.gettempdir()  # this process keeps its own temp dir (pytest's tmp_path lives there)
    run_tmp = tempfile.mkdtemp(prefix="agcore-tests-")
    config.stash[_run_tmp] = (run_tmp, os.environ.get("TMPDIR"))
    os.environ["TMPDIR"] = run_tmp
    os.environ[_RUN_TMP_KEY] = run_tmp


def pytest_unconfigure(config: pytest.Config) -> None:
    run_tmp, previous = config.stash.get(_run_tmp, (None, None))
    if run_tmp is None:
        return
    if previous is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = previous
    os.environ.pop(_RUN_TMP_KEY, None)
    shutil.rmtree(run_tmp, ignore_errors=True)


_run_tmp = pytest.StashKey[tuple[str | None, str | None]]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Browser tests last: they are the slowest, and the fast suites should fail first.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture
def run_tmpdir() -> Iterator[str]:
    """The per-run ``TMPDIR`` child processes get (removed when the run ends)."""
    yield os.environ[_RUN_TMP_KEY]


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
