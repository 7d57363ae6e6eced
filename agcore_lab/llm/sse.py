"""An incremental Server-Sent-Events parser.

Feed it what arrives on the wire (byte chunks split anywhere, or whole lines) and it returns
the events completed so far, following the `HTML event-stream rules`_: ``field: value`` lines,
``data`` lines joined with newlines, ``:`` comments ignored, an event dispatched at each blank
line, ``\\r\\n``, ``\\n`` and ``\\r`` line endings. It does no I/O, so it is easy to test and works
with any transport.

OpenAI-style streams end with a ``data: [DONE]`` event; :attr:`SSEEvent.is_done` spots it.
After the transport reports end of stream, :attr:`SSEParser.pending` tells whether the stream
was cut off in the middle of an event (a partial line or data not yet dispatched).

Example:
    >>> from agcore_lab.llm.sse import SSEParser
    >>> parser = SSEParser()
    >>> parser.feed(b'data: {"a": 1}\\n\\ndata: [DO')
    [SSEEvent(data='{"a": 1}', event='message', id=None, retry=None)]
    >>> parser.pending
    True
    >>> [e.is_done for e in parser.feed(b"NE]\\n\\n")]
    [True]

.. _HTML event-stream rules:
   https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["DONE", "SSEEvent", "SSEParser"]

DONE = "[DONE]"
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event.

    Attributes:
        data: The ``data`` lines joined with ``\\n``.
        event: The ``event`` field; ``"message"`` when the event did not name one.
        id: The last event id seen on the stream so far, if any.
        retry: The reconnection time in milliseconds, if this event set one.
    """

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None

    @property
    def is_done(self) -> bool:
        """Whether this is the ``data: [DONE]`` end marker of OpenAI-style streams."""
        return self.data.strip() == DONE


class SSEParser:
    """Turns a Server-Sent-Events stream into :class:`SSEEvent` objects, incrementally.

    Not thread-safe: use one parser per stream, from one task.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._skip_lf = False  # the last chunk ended with "\r": a following "\n" belongs to it
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self._retry: int | None = None
        self._last_id: str | None = None

    @property
    def pending(self) -> bool:
        """Whether an unterminated line or undispatched data is buffered.

        True after end of stream means the stream was cut off in the middle of an event.
        """
        partial_char = bool(self._decoder.getstate()[0])
        return bool(
            partial_char or self._buffer or self._data or self._event or self._retry is not None
        )

    def feed(self, chunk: bytes | str) -> list[SSEEvent]:
        """Add a chunk of the stream (split anywhere, even inside a UTF-8 character).

        Returns:
            The events completed by this chunk, in order.
        """
        text = self._decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._skip_lf and text:
            self._skip_lf = False
            text = text.removeprefix("\n")
        text = self._buffer + text
        events: list[SSEEvent] = []
        start = 0
        # Not str.splitlines: it also breaks on \v, \f, \x1c-\x1e, \x85 and \u2028, which
        # JSON may carry unescaped; only \r\n, \r and \n end an SSE line.
        for match in _LINE_END.finditer(text):
            event = self.feed_line(text[start : match.start()])
            start = match.end()
            if event is not None:
                events.append(event)
        self._buffer = text[start:]
        if text:
            self._skip_lf = text.endswith("\r")
        return events

    def feed_line(self, line: bytes | str) -> SSEEvent | None:
        """Add one complete line, without its line ending.

        Returns:
            The event a blank line dispatches, or None.
        """
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\x00" not in value:
            self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, event, retry = self._data, self._event, self._retry
        self._data, self._event, self._retry = [], "", None
        if not data:
            return None
        return SSEEvent(
            data="\n".join(data), event=event or "message", id=self._last_id, retry=retry
        )
