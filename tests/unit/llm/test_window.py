"""``MessageWindow``: a frozen view of head messages and a history prefix."""

from __future__ import annotations

import pytest

from agcore_lab.llm.messages import Message, SystemMessage, UserMessage
from agcore_lab.llm.window import MessageWindow


def _history(n: int) -> list[Message]:
    return [UserMessage(content=f"m{i}") for i in range(n)]


def test_a_window_behaves_as_the_list_it_stands_for_and_ignores_later_appends() -> None:
    system = SystemMessage(content="s")
    history = _history(5)
    window = MessageWindow((system,), history, 4)
    expected = [system, *history[:4]]
    history.append(UserMessage(content="after"))
    assert len(window) == 5 and list(window) == expected and window == expected
    assert [window[i] for i in range(-5, 5)] == [*expected, *expected]
    for piece in (
        slice(None),
        slice(1, None),
        slice(0, 1),
        slice(2, 4),
        slice(-2, None),
        slice(None, -1),
        slice(4, 2),
        slice(None, None, 2),
        slice(3, 100),
    ):
        assert window[piece] == expected[piece], piece
    with pytest.raises(IndexError):
        window[5]
    with pytest.raises(IndexError):
        window[-6]
    assert window != expected[:-1] and window != [*expected[:-1], history[4]]
    assert MessageWindow((), history, 0) == [] and list(reversed(window)) == expected[::-1]
