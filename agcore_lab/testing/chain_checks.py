"""Conformance checks of reading message chains back: a chain's newest part
(``load_chain_tail``), and messages read back equal to what was written, whatever path the
backend takes to build them (plain rows are built without a validation pass)."""

from __future__ import annotations

from agcore_lab.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from agcore_lab.store.base import LinkRecord, Store
from agcore_lab.testing._support import (
    chain_links,
    every_kind_of_message,
    expect_equal,
    expect_raises,
    session_record,
)

__all__ = ["check_chain_history", "check_chain_read_back", "check_chain_tail"]


def _plain_messages() -> list[Message]:
    return [
        SystemMessage(content="plain system"),
        UserMessage(content="plain question"),
        AssistantMessage(content="plain answer"),
        AssistantMessage(content=None),
        ToolMessage(content="plain result", tool_call_id="call_9"),
        ToolMessage(content="named result", tool_call_id="call_8", name="add"),
    ]


def _home_links(messages: list[Message], parent: LinkRecord | None = None) -> list[LinkRecord]:
    # Messages placed for the first time: each message is its own chain node.
    links: list[LinkRecord] = []
    head, depth = (parent.node_id, parent.depth + 1) if parent else (None, 0)
    for i, message in enumerate(messages):
        links.append(
            LinkRecord(
                node_id=message.id, parent_node_id=head, message_id=message.id, depth=depth + i
            )
        )
        head = message.id
    return links


def check_chain_read_back(store: Store) -> None:
    """Messages of every role, with and without extra fields, at home or linked, come back
    equal to what was written: same fields, same values, same types."""
    store.create_session(session_record())
    plain = _plain_messages()
    home = _home_links(plain)
    rich = every_kind_of_message()
    linked = chain_links(rich, "x", home[-1])
    store.commit(session_record(), messages=plain + rich, links=home + linked)
    chain = store.load_chain(linked[-1].node_id)
    expect_equal([link for link, _ in chain], home + linked, "links read back")
    for (_, got), want in zip(chain, plain + rich, strict=True):
        expect_equal(got, want, f"the {want.role} message {want.id}")
        expect_equal(type(got), type(want), f"the type of {want.id}")
        expect_equal(got.model_dump(), want.model_dump(), f"the fields of {want.id}")
        expect_equal(got.token_estimate, want.token_estimate, f"token estimate of {want.id}")
    first, second = chain[1][1], chain[2][1]
    fields = set(second.model_fields_set)
    changed = first.model_copy(update={"metadata": {"edited": True}})
    expect_equal(changed.metadata, {"edited": True}, "a copy of a loaded message")
    expect_equal(first.metadata, {}, "the loaded message after a copy of it changed")
    expect_equal(second.model_fields_set, fields, "another loaded message after a copy changed")


def check_chain_tail(store: Store) -> None:
    """``load_chain_tail(head, n)`` is the newest ``n`` nodes of ``load_chain(head)``, oldest
    first; its first entry's parent is where the rest continues; unknown nodes give ``[]``."""
    store.create_session(session_record())
    plain = _plain_messages()
    home = _home_links(plain)
    rich = every_kind_of_message()
    linked = chain_links(rich, "t", home[-1])
    store.commit(session_record(), messages=plain + rich, links=home + linked)
    head = linked[-1].node_id
    whole = store.load_chain(head)
    for limit in (1, 2, len(rich), len(rich) + 1, len(whole), len(whole) + 5):
        tail = store.load_chain_tail(head, limit)
        expect_equal(tail, whole[-limit:], f"the newest {limit} nodes")
    tail = store.load_chain_tail(head, 3)
    expect_equal(tail[0][0].parent_node_id, whole[-4][0].node_id, "where the rest continues")
    expect_equal(store.load_chain_tail(home[2].node_id, 2), whole[1:3], "a tail from a mid node")
    expect_equal(store.load_chain_tail("no-such-node", 3), [], "the tail of an unknown node")
    expect_raises(ValueError, "a limit of 0", store.load_chain_tail, head, 0)


def check_chain_history(store: Store) -> None:
    """``load_chain_history(head)`` holds the messages of ``load_chain(head)``: equal, of
    the same types and fields, the nodes placed by links named by index; an unknown node
    gives an empty history."""
    read = store.load_chain_history
    store.create_session(session_record())
    plain = [*_plain_messages(), UserMessage(id="short-id", content="another id length")]
    home = _home_links(plain)
    rich = every_kind_of_message()
    linked = chain_links(rich, "h", home[-1])
    store.commit(session_record(), messages=plain + rich, links=home + linked)
    chain = store.load_chain(linked[-1].node_id)
    history, nodes = read(linked[-1].node_id)
    expect_equal(len(history), len(chain), "the length of the history")
    for got, (_, want) in zip(history, chain, strict=True):
        expect_equal(got, want, f"the {want.role} message {want.id}")
        expect_equal(type(got), type(want), f"the type of {want.id}")
        expect_equal(got.model_dump(), want.model_dump(), f"the fields of {want.id}")
        expect_equal(got.model_fields_set, want.model_fields_set, f"fields set of {want.id}")
    placed = {i: link.node_id for i, (link, m) in enumerate(chain) if link.node_id != m.id}
    expect_equal(nodes, placed, "the nodes placed by links")
    expect_equal(len(placed), len(rich), "every linked message is named")
    empty, none = read("no-such-node")
    expect_equal((len(empty), none), (0, {}), "the history of an unknown node")
