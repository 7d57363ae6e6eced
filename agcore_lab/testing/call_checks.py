"""Store conformance checks for model-call records (see
:mod:`agcore_lab.testing.store_conformance`)."""

from __future__ import annotations

from agcore_lab.errors import AgcoreError, SessionNotFoundError
from agcore_lab.ids import new_id
from agcore_lab.llm.base import ToolSpec
from agcore_lab.llm.call_note import CallNote
from agcore_lab.llm.call_record import ModelCall, request_hash
from agcore_lab.llm.messages import AssistantMessage, Message, SystemMessage, ToolCall, UserMessage
from agcore_lab.llm.usage import Usage
from agcore_lab.store.base import CkptMeta, Store
from agcore_lab.testing._support import chain_links, expect_equal, expect_raises, session_record

__all__ = [
    "check_call_parts_outlive_failed_writes_and_cleanups",
    "check_calls_follow_checkpoints",
    "check_calls_round_trip",
    "check_calls_written_on_their_own",
    "check_unhashed_calls_read_back_with_their_hash",
]

_TOOL = ToolSpec(name="add", description="Add.", parameters={"type": "object"})


def _call(
    request: list[Message],
    response: AssistantMessage | None,
    *,
    tail: tuple[str, int] | None = None,
    response_stored: bool = False,
    **fields: object,
) -> ModelCall:
    call = ModelCall.model_validate(
        {
            "call_id": new_id("call"),
            "session_id": "s1",
            "model": "m",
            "request_messages": request,
            "tools": [_TOOL],
            "response": response,
            "usage": Usage(prompt_tokens=7, completion_tokens=3, requests=1),
            "request_hash": request_hash(request, [_TOOL], "m", {}),
            **fields,
        }
    )
    call._tail, call._response_stored = tail, response_stored
    return call


def check_calls_round_trip(store: Store) -> None:
    """Calls committed with a turn read back equal, their history read through the chain."""
    store.create_session(session_record())
    ask = ToolCall(name="add", arguments={"a": 1}, id="c1")
    turn: list[Message] = [
        UserMessage(content="1?"),
        AssistantMessage(content=None, tool_calls=(ask,)),
        UserMessage(content="and?"),
        AssistantMessage(content="done"),
    ]
    links = chain_links(turn, "n")
    system = SystemMessage(content="be brief")
    first = _call([system, turn[0]], turn[1], tail=("n0", 1), response_stored=True)  # type: ignore[arg-type]
    second = _call(
        [system, *turn[:3]],
        turn[3],  # type: ignore[arg-type]
        tail=("n2", 3),
        response_stored=True,
        finish_reason="stop",
        params={"temperature": 0.5},
        injected={0: "system_prompt"},
        latency_s=0.25,
        ttft_s=0.125,
        streamed=True,
    )
    store.commit(session_record(), messages=turn, links=links, calls=[first, second])
    calls = store.list_calls("s1")
    expect_equal([c.call_id for c in calls], [first.call_id, second.call_id], "calls oldest first")
    read = calls[1]
    expect_equal(
        [(m.role, m.text) for m in read.request_messages],
        [(m.role, m.text) for m in second.request_messages],
        "request messages read back",
    )
    expect_equal(read.request_messages[1:], turn[:3], "the history part is the stored messages")
    expect_equal(read.response, turn[3], "the response is the stored message")
    expect_equal(
        (read.usage, read.finish_reason, read.params, read.injected, read.tools),
        (second.usage, "stop", {"temperature": 0.5}, {0: "system_prompt"}, [_TOOL]),
        "call fields read back",
    )
    expect_equal((read.latency_s, read.ttft_s, read.streamed), (0.25, 0.125, True), "timings")
    expect_equal(read.request_hash, second.request_hash, "the request hash")
    expect_equal(store.list_calls("s1", last=1), [read], "the newest call")
    expect_equal(store.list_calls(call_id=first.call_id)[0].call_id, first.call_id, "by id")
    expect_equal(store.list_calls("nope"), [], "calls of an unknown session")


def check_calls_written_on_their_own(store: Store) -> None:
    """``insert_calls`` keeps calls whose messages were never committed, with their error;
    a commit that fails stores none of its calls."""
    store.create_session(session_record())
    lost = _call([UserMessage(content="never committed")], None, status="error", error="E: x")
    store.insert_calls([lost])
    store.insert_calls([lost])  # again: skipped
    (read,) = store.list_calls("s1")
    expect_equal(
        (read.status, read.error, read.response, read.request_messages[0].text),
        ("error", "E: x", None, "never committed"),
        "a failed call",
    )
    orphan = _call([UserMessage(content="x")], AssistantMessage(content="y"), session_id="ghost")
    expect_raises(
        SessionNotFoundError,
        "commit to an unknown session",
        lambda: store.commit(session_record("ghost"), calls=[orphan]),
    )
    expect_equal(store.list_calls("ghost"), [], "no calls of a failed commit")


def check_calls_follow_checkpoints(store: Store) -> None:
    """A call leads to the session's next checkpoint; deleting that checkpoint deletes the
    call; deleting the session deletes all its calls."""
    store.create_session(session_record())
    before = _call([UserMessage(content="a")], AssistantMessage(content="b"))
    store.insert_calls([before])
    ckpt = CkptMeta(ckpt_id=new_id("ckpt"), session_id="s1", turn_index=1, agent_name="a")
    store.put_checkpoint(ckpt)
    after = _call([UserMessage(content="c")], AssistantMessage(content="d"))
    store.insert_calls([after])
    expect_equal(
        [c.ckpt_id for c in store.list_calls("s1")], [ckpt.ckpt_id, None], "the checkpoint led to"
    )
    store.delete_checkpoints("s1", [ckpt.ckpt_id])
    expect_equal([c.call_id for c in store.list_calls("s1")], [after.call_id], "after a prune")
    store.delete_session("s1")
    expect_equal(store.list_calls("s1"), [], "after deleting the session")


def _note(
    session_id: str, request: list[Message], response: AssistantMessage, tail: tuple[str, int]
) -> CallNote:
    note = CallNote(new_id("call"), session_id, "main", 1, "turn", "m", request, [_TOOL])
    note.tail, note.response, note.response_stored = tail, response, True
    note.usage = Usage(prompt_tokens=2, completion_tokens=1, requests=1)
    return note


def check_unhashed_calls_read_back_with_their_hash(store: Store) -> None:
    """A recorder's note is stored without a request hash; it reads back with the hash of
    the request as it was sent (derived from the stored parts), and a note or record that
    carries a hash reads back with that one."""
    store.create_session(session_record())
    turn: list[Message] = [UserMessage(content="1?"), AssistantMessage(content="1")]
    more: list[Message] = [UserMessage(content="2?"), AssistantMessage(content="2")]
    system = SystemMessage(content="be brief")
    first = _note("s1", [system, turn[0]], turn[1], ("n0", 1))  # type: ignore[arg-type]
    links = chain_links(turn, "n")
    store.commit(session_record(), messages=turn, links=links, calls=[first])
    second = _note("s1", [system, *turn, more[0]], more[1], ("m0", 3))  # type: ignore[arg-type]
    second.request_hash = "ab" * 16  # a hash known when it was written is kept as it is
    store.commit(
        session_record(version=1),
        messages=more,
        links=chain_links(more, "m", links[-1]),
        calls=[second],
    )
    read = store.list_calls("s1")
    expect_equal(
        [c.request_hash for c in read],
        [request_hash([system, turn[0]], [_TOOL], "m", {}), "ab" * 16],
        "the request hashes read back",
    )
    expect_equal(read[0].request_messages[1:], turn[:1], "the history part read back")


def check_call_parts_outlive_failed_writes_and_cleanups(store: Store) -> None:
    """The tools a session's calls reference are readable after a write that failed once
    it had written them (so they were not stored), and after the session's calls were
    pruned and the parts no call used were cleaned up."""
    store.create_session(session_record())
    question, answer = UserMessage(content="1?"), AssistantMessage(content="1")
    turn: list[Message] = [question, answer]
    links = chain_links(turn, "n")
    taken = CkptMeta(ckpt_id=new_id("ckpt"), session_id="s1", turn_index=0, agent_name="a")
    store.put_checkpoint(taken)
    lost = _note("s1", [question], answer, ("n0", 1))
    expect_raises(
        AgcoreError,  # the checkpoint id is taken: the write fails after its calls
        "a commit whose checkpoint is stored already",
        lambda: store.commit(
            session_record(), messages=turn, links=links, calls=[lost], checkpoint=taken
        ),
    )
    again = _note("s1", [question], answer, ("n0", 1))
    store.commit(session_record(), messages=turn, links=links, calls=[again])
    expect_equal([c.tools for c in store.list_calls("s1")], [[_TOOL]], "tools after a failure")
    store.commit(session_record(version=1), calls=[_note("s1", [question], answer, ("n0", 1))])
    ckpt = CkptMeta(ckpt_id=new_id("ckpt"), session_id="s1", turn_index=1, agent_name="a")
    store.put_checkpoint(ckpt)
    store.delete_checkpoints("s1", [ckpt.ckpt_id])  # prunes the session's calls
    expect_equal(store.list_calls("s1"), [], "the calls after the prune")
    store.create_session(session_record("s2"))
    store.insert_calls([_call([UserMessage(content="x")], None, session_id="s2")])
    store.delete_session("s2")  # cleans up the parts no call uses (the tools, now)
    more: list[Message] = [UserMessage(content="2?"), AssistantMessage(content="2")]
    later = _note("s1", [*turn, more[0]], more[1], ("m0", 3))  # type: ignore[arg-type]
    store.commit(
        session_record(version=2),
        messages=more,
        links=chain_links(more, "m", links[-1]),
        calls=[later],
    )
    (read,) = store.list_calls("s1")
    expect_equal((read.call_id, read.tools), (later.call_id, [_TOOL]), "tools after a cleanup")
