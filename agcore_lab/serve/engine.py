"""How the ASGI app's event loop reaches the engine.

A manager's async objects (turn locks aside, which work from any loop) belong to the loop that
first used them: an ``httpx.AsyncClient`` inside an ``OpenAIChatModel``, queues, tasks. So one
loop must run all of a manager's coroutines. Two placements:

- ``"app"``: the engine runs on the server's own loop (uvicorn's). Right when the whole manager
  lives in the server process and nothing else drives it — ``agcore-lab serve`` does this. No
  thread hop per call.
- ``"bridge"``: every engine coroutine is handed to agcore_lab's one background loop
  (:mod:`agcore_lab.aio`), where the ``*_sync`` twins and widget callbacks run it too. Right
  when the manager is shared with a notebook (``%agcore serve``) or other code that uses the
  sync twins; it costs one thread hop per call (``bench/serve.py`` measures it).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from typing import Any, Literal, TypeVar

from agcore_lab.aio import submit

__all__ = ["EngineLoop", "EngineRunner"]

T = TypeVar("T")
EngineLoop = Literal["app", "bridge"]


class EngineRunner:
    """Runs engine coroutines on the chosen loop (see the module docstring)."""

    def __init__(self, placement: EngineLoop) -> None:
        if placement not in ("app", "bridge"):
            raise ValueError(f"engine_loop must be 'app' or 'bridge', not {placement!r}")
        self.placement: EngineLoop = placement

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the engine's loop."""
        if self.placement == "app":
            return await coro
        return await asyncio.wrap_future(submit(coro))

    async def stream(self, agen: AsyncIterator[T]) -> AsyncIterator[T]:
        """Iterate ``agen`` on the engine's loop; closing this closes ``agen`` there too."""
        if self.placement == "app":
            try:
                async for item in agen:
                    yield item
            finally:
                aclose = getattr(agen, "aclose", None)
                if aclose is not None:
                    await aclose()
            return
        done = False
        try:
            while True:
                try:
                    item = await self.call(_next(agen))
                except StopAsyncIteration:
                    done = True
                    return
                yield item
        finally:
            aclose = getattr(agen, "aclose", None)
            if not done and aclose is not None:
                await asyncio.shield(asyncio.wrap_future(submit(aclose())))


async def _next(agen: AsyncIterator[T]) -> T:
    return await agen.__anext__()
