"""The async seam: ``as_async`` picks direct calls or a thread hop per backend, and the
conformance checks catch a ``Store`` method the async side does not forward."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from agcore_lab.errors import InvalidInputError
from agcore_lab.store import AsyncStore, SqliteStore, ThreadedAsyncStore, as_async
from agcore_lab.store.roles import SessionStore
from agcore_lab.testing.async_checks import (
    check_async_adapter_forwards_every_method,
    check_async_protocol_mirrors_store,
    store_protocol_methods,
)


class _Slow(SqliteStore):
    """A store whose reads take a while (as a network round trip does)."""

    def list_sessions(self) -> list[Any]:
        time.sleep(0.2)
        return super().list_sessions()


def test_as_async_picks_per_backend() -> None:
    store = SqliteStore(":memory:")
    adapter = as_async(store)
    assert isinstance(adapter, ThreadedAsyncStore) and isinstance(adapter, AsyncStore)
    assert adapter.hop is False and adapter.sync_store is store
    assert as_async(adapter) is adapter  # an AsyncStore is used as it is

    class _Unknown(SqliteStore):
        async_hop = True

    assert as_async(_Unknown(":memory:")).hop is True
    assert "hop=False" in repr(adapter)


def test_a_hop_keeps_the_loop_free_and_a_direct_call_does_not() -> None:
    async def ticks_during(adapter: ThreadedAsyncStore) -> int:
        count = 0

        async def tick() -> None:
            nonlocal count
            while True:
                await asyncio.sleep(0.01)
                count += 1

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0)
        assert await adapter.alist_sessions() == []
        ticker.cancel()
        return count

    slow = _Slow(":memory:")
    assert asyncio.run(ticks_during(ThreadedAsyncStore(slow, hop=True))) >= 5
    assert asyncio.run(ticks_during(ThreadedAsyncStore(slow, hop=False))) == 0


def test_arun_runs_sync_work_where_store_calls_run() -> None:
    # A reload or recover (several sync reads) hops with the store's calls, or stays direct.
    async def thread_of(adapter: ThreadedAsyncStore) -> tuple[int, int, int]:
        here = threading.get_ident()
        ran, value = await adapter.arun(lambda n: (threading.get_ident(), n), 7)
        return here, ran, value

    store = SqliteStore(":memory:")
    here, ran, seven = asyncio.run(thread_of(ThreadedAsyncStore(store, hop=True)))
    assert ran != here and seven == 7
    here, ran, seven = asyncio.run(thread_of(ThreadedAsyncStore(store, hop=False)))
    assert ran == here and seven == 7


def test_a_recover_and_a_reload_through_a_hopping_store_keep_the_session_right() -> None:
    from agcore_lab import Agent, RuntimeBundle, ScriptedModel, SessionManager

    class _Hopping(SqliteStore):
        async_hop = True  # as PostgresStore: the engine's store calls run on worker threads

    store = _Hopping(":memory:")
    assert as_async(store).hop
    agent = Agent(name="w", model=ScriptedModel())
    first = SessionManager(bundle=RuntimeBundle(store=store), agents=[agent])
    sid = first.create_sync(agent)
    first.submit_turn_sync(sid, "one")
    other = SessionManager(bundle=RuntimeBundle(store=store), agents=[agent])
    other.recover_sync(sid)
    other.submit_turn_sync(sid, "two")  # moves the store on: the first manager reloads
    first.submit_turn_sync(sid, "three")
    texts = [m.text for m in first.get_sync(sid).messages if m.role == "user"]
    assert texts == ["one", "two", "three"]


def test_the_adapter_refuses_a_non_store() -> None:
    with pytest.raises(InvalidInputError, match="needs a Store.*object lacks acquire_lease"):
        ThreadedAsyncStore(object())  # type: ignore[arg-type]

    class _NoFrames(SqliteStore):
        read_dataframe = None  # type: ignore[assignment]

    with pytest.raises(InvalidInputError, match="_NoFrames lacks read_dataframe$"):
        as_async(_NoFrames(":memory:"))


def test_a_method_added_to_store_only_fails_the_mirror_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def session_count(self: object) -> int:
        """A new protocol method nobody gave an async twin."""
        return 0

    monkeypatch.setattr(SessionStore, "session_count", session_count, raising=False)
    assert "session_count" in store_protocol_methods()
    with pytest.raises(AssertionError, match="AsyncStore's methods"):
        check_async_protocol_mirrors_store(SqliteStore(":memory:"))


def test_an_adapter_forwarding_to_the_wrong_method_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    async def wrong(self: ThreadedAsyncStore, session_id: str) -> object:
        return self.sync_store.session_version(session_id)

    monkeypatch.setattr(ThreadedAsyncStore, "aget_session", wrong)
    with pytest.raises(AssertionError, match="aget_session"):
        check_async_adapter_forwards_every_method(SqliteStore(":memory:"))


def test_a_wrong_signature_fails_the_mirror_check(monkeypatch: pytest.MonkeyPatch) -> None:
    async def narrower(self: ThreadedAsyncStore, session_id: str) -> bool:
        return self.sync_store.delete_session(session_id)

    monkeypatch.setattr(ThreadedAsyncStore, "adelete_session", narrower)
    with pytest.raises(AssertionError, match="adelete_session has Store.delete_session"):
        check_async_protocol_mirrors_store(SqliteStore(":memory:"))
