"""A message's fields beyond its row's columns (its metadata, a user's name, an answer's tool
calls, a tool result's error flag) are stored with it when they do not hold their defaults,
whether given at creation or put into its metadata later; a message holding only defaults
is stored without them (and is not dumped to find that out)."""

from __future__ import annotations

from agcore_lab.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_lab.store.base import LinkRecord, SessionRecord
from agcore_lab.store.sqlite import SqliteStore


def test_every_field_beyond_the_columns_comes_back() -> None:
    store = SqliteStore(":memory:")
    record = SessionRecord(session_id="ses_x", agent_name="a")
    store.create_session(record)
    later = UserMessage(content="tagged later")
    later.metadata["source"] = "a tool"  # into the (frozen) message's metadata, in place
    call = ToolCall(id="call_1", name="look", arguments={"q": "x"})
    messages: list[Message] = [
        SystemMessage(content="be brief"),
        UserMessage(content="plain"),
        UserMessage(content="named", name="ann", metadata={"lang": "en"}),
        later,
        AssistantMessage(content=None, tool_calls=(call,)),
        ToolMessage(content="boom", tool_call_id="call_1", name="look", is_error=True),
        AssistantMessage(content="done"),
    ]
    links = [
        LinkRecord(
            node_id=m.id,
            parent_node_id=messages[i - 1].id if i else None,
            message_id=m.id,
            depth=i,
        )
        for i, m in enumerate(messages)
    ]
    store.commit(record, messages=messages, links=links)
    back = [m for _, m in store.load_chain(messages[-1].id)]
    assert back == messages
    assert back[3].metadata == {"source": "a tool"}
    extras = [
        row[0]
        for row in store.connection.execute("SELECT extra_json FROM chain_nodes ORDER BY depth")
    ]
    assert [extra is None for extra in extras] == [True, True, False, False, False, False, True]
