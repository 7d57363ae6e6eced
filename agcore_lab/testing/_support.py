"""Helpers shared by the store conformance checks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from agcore_lab.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_lab.store.base import LinkRecord, SessionRecord, Store

__all__ = [
    "T0",
    "run_checks",
    "chain_links",
    "chain_messages",
    "every_kind_of_message",
    "expect",
    "expect_equal",
    "expect_raises",
    "session_record",
]

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def expect_equal(actual: Any, expected: Any, what: str) -> None:
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


def expect_raises(
    error: type[BaseException], what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> BaseException:
    try:
        fn(*args, **kwargs)
    except error as exc:
        return exc
    except Exception as exc:
        raise AssertionError(f"{what}: expected {error.__name__}, got {exc!r}") from exc
    raise AssertionError(f"{what}: expected {error.__name__}, nothing was raised")


def session_record(session_id: str = "s1", **changes: Any) -> SessionRecord:
    fields: dict[str, Any] = {
        "session_id": session_id,
        "agent_name": "agent",
        "created_at": T0,
        "updated_at": T0,
    }
    fields.update(changes)
    return SessionRecord(**fields)


def chain_links(
    messages: list[Message], prefix: str, parent: LinkRecord | None = None
) -> list[LinkRecord]:
    """Chain ``messages`` after ``parent`` with node ids ``<prefix>0``, ``<prefix>1``, ..."""
    links: list[LinkRecord] = []
    head, depth = (parent.node_id, parent.depth + 1) if parent else (None, 0)
    for i, message in enumerate(messages):
        link = LinkRecord(
            node_id=f"{prefix}{i}", parent_node_id=head, message_id=message.id, depth=depth + i
        )
        links.append(link)
        head = link.node_id
    return links


def chain_messages(store: Store, head: str) -> list[Message]:
    return [message for _, message in store.load_chain(head)]


def every_kind_of_message() -> list[Message]:
    call = ToolCall(name="add", arguments={"a": 2, "b": [1, {"c": None}]}, id="call_1")
    return [
        SystemMessage(content="be brief", metadata={"source": "test"}),
        UserMessage(content="what is 2 + 3? 二加三", name="ada"),
        AssistantMessage(content=None, tool_calls=(call,)),
        ToolMessage(content="5", tool_call_id="call_1", name="add"),
        ToolMessage(content="Error: boom", tool_call_id="call_2", name="add", is_error=True),
        AssistantMessage(content="2 + 3 = 5"),
    ]


def run_checks(
    checks: Mapping[str, Callable[[Any], None]],
    make: Callable[[], Any],
    run_one: Callable[[Callable[[], Any], Callable[[Any], None]], None],
    *,
    only: Iterable[str] | None,
    failure: type[AssertionError],
    what: str,
) -> None:
    """Run named checks (``only`` some of them), each through ``run_one(make, check)``, and
    raise ``failure`` listing every check that failed and why."""
    names = list(checks) if only is None else list(only)
    failures: list[str] = []
    for name in names:
        try:
            run_one(make, checks[name])
        except AssertionError as exc:
            failures.append(f"{name}: {exc}")
    if failures:
        raise failure(
            f"{len(failures)} of {len(names)} {what} conformance checks failed:\n"
            + "\n".join(failures)
        )
