"""Conformance checks for the async seam: :func:`~agcore_lab.store.threaded.as_async` over a
backend forwards every method of the :class:`~agcore_lab.store.base.Store` protocol.

Part of :data:`agcore_lab.testing.store_conformance.CONFORMANCE_CHECKS`, so each backend runs
them on its own stores: a method added to ``Store`` but not to ``AsyncStore`` (or to the
adapter) fails here, on every backend.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

from agcore_lab.aio import run_sync
from agcore_lab.llm.messages import AssistantMessage, Message, UserMessage
from agcore_lab.store.aio import AsyncStore
from agcore_lab.store.base import CkptMeta, SlotRecord, Store
from agcore_lab.store.threaded import ThreadedAsyncStore, as_async
from agcore_lab.testing._support import chain_links, expect, expect_equal, session_record

__all__ = [
    "check_async_adapter_forwards_every_method",
    "check_async_protocol_mirrors_store",
    "check_async_round_trip",
    "store_protocol_methods",
]

# Members of AsyncStore that are not the ``a`` twin of a Store method.
_ASYNC_ONLY = {"sync_store", "aclose", "origin", "arun"}


def _members(protocol: type) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for cls in reversed(protocol.__mro__):
        if getattr(cls, "_is_protocol", False) and cls.__module__.startswith("agcore_lab."):
            found.update({k: v for k, v in vars(cls).items() if not k.startswith("_")})
    return found


def store_protocol_methods() -> dict[str, Any]:
    """Every method of the ``Store`` protocol (over all its roles), by name; ``origin`` (a
    property) is left out."""
    return {k: v for k, v in _members(Store).items() if callable(v)}


def _same_signature(sync: Any, twin: Any) -> bool:
    a, b = inspect.signature(sync), inspect.signature(twin)
    return list(a.parameters.values()) == list(b.parameters.values()) and (
        a.return_annotation == b.return_annotation
    )


def check_async_protocol_mirrors_store(store: Store) -> None:
    """``AsyncStore`` has an ``a``-twin of every ``Store`` method with the same parameters and
    result, and nothing else; ``as_async(store)`` is an ``AsyncStore`` with them all."""
    sync = store_protocol_methods()
    twins = _members(AsyncStore)
    expect_equal(
        sorted(set(twins) - _ASYNC_ONLY),
        sorted(f"a{name}" for name in sync if name != "close"),
        "AsyncStore's methods against Store's",
    )
    adapter = as_async(store)
    expect(isinstance(adapter, AsyncStore), "as_async(store) is an AsyncStore")
    for name, method in sync.items():
        twin_name = "aclose" if name == "close" else f"a{name}"
        for owner in (AsyncStore, type(adapter)):
            twin = getattr(owner, twin_name, None)
            expect(
                twin is not None and inspect.iscoroutinefunction(twin),
                f"{owner.__name__}.{twin_name} is a coroutine function",
            )
            if name != "close":
                expect(
                    _same_signature(method, twin),
                    f"{owner.__name__}.{twin_name} has Store.{name}'s signature",
                )
    expect_equal(adapter.origin, store.origin, "the adapter's origin")
    expect(adapter.sync_store is store, "the adapter's sync_store is the store it wraps")


def check_async_adapter_forwards_every_method(store: Store) -> None:
    """Each ``a``-method of ``as_async(store)`` calls the sync method of the same name with
    exactly its arguments and returns its result — on the loop's thread when the backend
    says ``async_hop = False``, in another thread otherwise."""
    adapter = as_async(store)
    expect(isinstance(adapter, ThreadedAsyncStore), "a sync store is wrapped by the adapter")
    assert isinstance(adapter, ThreadedAsyncStore)
    expect_equal(adapter.hop, getattr(type(store), "async_hop", True), "the adapter's hop")
    seen: list[tuple[str, tuple[Any, ...], dict[str, Any], int]] = []
    methods = {name: m for name, m in store_protocol_methods().items() if name != "close"}
    for name in methods:

        def record(*args: Any, _name: str = name, **kwargs: Any) -> object:
            seen.append((_name, args, kwargs, threading.get_ident()))
            return (_name, "result")

        setattr(store, name, record)  # an instance attribute shadows the method
    try:
        for name, method in methods.items():
            params = list(inspect.signature(method).parameters.values())[1:]
            args = tuple(object() for p in params if p.kind is p.POSITIONAL_OR_KEYWORD)
            kwargs = {p.name: object() for p in params if p.kind is p.KEYWORD_ONLY}

            async def call(
                name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
            ) -> tuple[object, int]:
                got = await getattr(adapter, f"a{name}")(*args, **kwargs)
                return got, threading.get_ident()

            seen.clear()
            result, loop_thread = run_sync(call(name, args, kwargs))
            expect_equal(result, (name, "result"), f"a{name}'s result")
            expect_equal(len(seen), 1, f"calls made by a{name}")
            called, got_args, got_kwargs, thread = seen[0]
            expect_equal(called, name, f"the method a{name} calls")
            expect(got_args == args and got_kwargs == kwargs, f"a{name} forwards its arguments")
            expect_equal(thread != loop_thread, adapter.hop, f"a{name} ran in a worker thread")
    finally:
        for name in methods:
            delattr(store, name)


def check_async_round_trip(store: Store) -> None:
    """Real work through ``as_async(store)`` reads back through the sync store and the other
    way round: create, commit, chain, checkpoint, memory, change feed, a DataFrame."""
    adapter = as_async(store)
    messages: list[Message] = [UserMessage(content="hi"), AssistantMessage(content="hello")]
    links = chain_links(messages, "n")
    slot = SlotRecord(session_id="s1", slot_id="main", head_node_id=links[-1].node_id)

    async def work() -> None:
        start = await adapter.alatest_change()
        await adapter.acreate_session(session_record())
        version = await adapter.acommit(
            session_record(turn_index=1), messages=messages, links=links, slots=[slot]
        )
        expect_equal(version, 1, "acommit's version")
        expect_equal(await adapter.asession_version("s1"), 1, "asession_version")
        chain = await adapter.aload_chain(links[-1].node_id)
        expect_equal([m for _, m in chain], messages, "aload_chain")
        ckpt = CkptMeta(ckpt_id="c1", session_id="s1", turn_index=1, agent_name="a", slots={})
        await adapter.aput_checkpoint(ckpt, expected_version=1)
        expect_equal([c.ckpt_id for c in await adapter.alist_checkpoints("s1")], ["c1"], "alist")
        entry = await adapter.amemory_set("s1", "k", [1, 2], {})
        expect_equal(entry.value, [1, 2], "amemory_set")
        expect_equal(await adapter.amemory_version("s1"), 1, "amemory_version")
        frame = await adapter.aread_dataframe(
            "SELECT session_id, turn_index FROM sessions WHERE session_id = ?", ["s1"]
        )
        expect_equal(frame.to_dict("records"), [{"session_id": "s1", "turn_index": 1}], "frame")
        expect(await adapter.alatest_change() > start, "the change feed moved on")

    run_sync(work())
    got = store.get_session("s1")
    expect(got is not None and got.turn_index == 1, "the sync store sees the async writes")
    expect_equal([e.key for e in store.memory_entries("s1")], ["k"], "memory, read sync")
