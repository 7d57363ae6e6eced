"""Group commit: the turn commits that one event loop asks for in the same loop iteration,
written in one transaction.

The children of a dispatch wake together (their model calls end in the same iteration) and
commit together. Each commit made alone costs a transaction — ``BEGIN IMMEDIATE``, a WAL
append of every page it touched, ``COMMIT`` — and the pages the commits share (the change
log, the newest checkpoint rows) are written once per commit. Grouped (the store's
``commit_many``), each commit is a savepoint of one transaction: kept or refused alone, as
when made one after another, while the group shares the commit and the pages.

A commit waits one loop iteration for its group, which costs a lone turn a loop hop: only the
tasks that ask for it (``grouped_commits()``; a dispatch's children do) are grouped, every
other commit is written at once. One whose caller was cancelled while it waited is not
written at all (as a cancelled turn writes nothing).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any

__all__ = ["CommitGroup", "grouped_commits", "wants_group"]

_GROUPED: contextvars.ContextVar[bool] = contextvars.ContextVar("agcore_grouped", default=False)


def grouped_commits() -> None:
    """Group the commits of the current task (and of the tasks it starts) from now on; a
    task's context is its own, so this reaches no other task."""
    _GROUPED.set(True)


def wants_group() -> bool:
    """Whether the current task's commits are grouped."""
    return _GROUPED.get()


_Item = tuple[Any, dict[str, Any], "asyncio.Future[int]"]


class CommitGroup:
    """Collects ``commit`` calls per event loop and writes each iteration's in one go.

    Args:
        store: A store with ``commit`` (a group of one is written with it) and
            ``commit_many`` (looked up at each write).
    """

    __slots__ = ("_store", "_waiting")

    def __init__(self, store: Any) -> None:
        self._store = store
        self._waiting: dict[asyncio.AbstractEventLoop, list[_Item]] = {}

    async def commit(self, session: Any, parts: dict[str, Any]) -> int:
        """Commit with the others of this loop iteration; the new version (or the error)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        group = self._waiting.get(loop)
        if group is None:
            group = self._waiting[loop] = []
            loop.call_soon(self._flush, loop)
        group.append((session, parts, future))
        return await future

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        group = [item for item in self._waiting.pop(loop, []) if not item[2].cancelled()]
        if not group:
            return
        try:
            if len(group) == 1:
                session, parts, _ = group[0]
                results: list[Any] = [_outcome(self._store.commit, session, parts)]
            else:
                results = self._store.commit_many([(session, parts) for session, parts, _ in group])
        except Exception as exc:  # the group's transaction failed: every commit with it
            results = [exc] * len(group)
        except BaseException:
            for _, _, future in group:
                future.cancel()
            raise
        for (_, _, future), result in zip(group, results, strict=True):
            if future.cancelled():  # cancelled while the group was written: too late
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)


def _outcome(commit: Callable[..., int], session: Any, parts: dict[str, Any]) -> Any:
    try:
        return commit(session, **parts)
    except Exception as exc:
        return exc
