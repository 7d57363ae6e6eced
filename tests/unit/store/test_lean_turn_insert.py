"""A turn's insert of new messages on schema 11 is one statement; when one of its messages is
stored already (sent again), the statement undoes itself whole and the careful way stores
the rest once — no row written twice, none lost."""

from __future__ import annotations

from agcore_lab.llm.messages import AssistantMessage, UserMessage
from agcore_lab.store.base import LinkRecord, SessionRecord, SlotRecord
from agcore_lab.store.sqlite import SqliteStore


def test_a_message_sent_again_beside_a_new_one_is_stored_once() -> None:
    store = SqliteStore(":memory:")
    record = SessionRecord(session_id="ses_a", agent_name="a")
    store.create_session(record)
    first = UserMessage(content="first")
    second = AssistantMessage(content="second")
    store.commit(
        record,
        messages=[first, second],
        links=[
            LinkRecord(node_id=first.id, parent_node_id=None, message_id=first.id, depth=0),
            LinkRecord(node_id=second.id, parent_node_id=first.id, message_id=second.id, depth=1),
        ],
    )
    third = UserMessage(content="third")
    # The new message comes first: its row is written before the stored one fails the insert.
    store.commit(
        record.model_copy(update={"version": 1}),
        messages=[third, second],
        links=[
            LinkRecord(node_id=third.id, parent_node_id=second.id, message_id=third.id, depth=2)
        ],
        slots=[SlotRecord(session_id="ses_a", slot_id="main", head_node_id=third.id)],
    )
    chain = store.load_chain(third.id)
    assert [(m.id, m.content) for _, m in chain] == [
        (first.id, "first"),
        (second.id, "second"),
        (third.id, "third"),
    ]
    conn = store.connection
    assert conn.execute("SELECT count(*) FROM chain_nodes").fetchone()[0] == 3
    assert conn.execute("SELECT count(*) FROM text_ids").fetchone()[0] == 0


def test_a_turn_after_a_message_kept_by_its_text_id_links_to_it() -> None:
    # An id not made by new_id (an imported history's) is kept as text; the next turn's
    # insert must find it there (what the commit's session update reads for the insert).
    store = SqliteStore(":memory:")
    record = SessionRecord(session_id="ses_b", agent_name="a")
    store.create_session(record)
    imported = UserMessage(id="imported-1", content="from elsewhere")
    store.commit(
        record,
        messages=[imported],
        links=[
            LinkRecord(node_id=imported.id, parent_node_id=None, message_id=imported.id, depth=0)
        ],
        slots=[SlotRecord(session_id="ses_b", slot_id="main", head_node_id=imported.id)],
    )
    conn = store.connection
    assert conn.execute("SELECT count(*) FROM text_ids").fetchone()[0] == 1
    answer = AssistantMessage(content="an answer")
    store.commit(
        record.model_copy(update={"version": 1}),
        messages=[answer],
        links=[
            LinkRecord(node_id=answer.id, parent_node_id=imported.id, message_id=answer.id, depth=1)
        ],
        slots=[SlotRecord(session_id="ses_b", slot_id="main", head_node_id=answer.id)],
    )
    chain = store.load_chain(answer.id)
    assert [(m.id, m.content) for _, m in chain] == [
        ("imported-1", "from elsewhere"),
        (answer.id, "an answer"),
    ]
    assert conn.execute("SELECT count(*) FROM text_ids").fetchone()[0] == 1
