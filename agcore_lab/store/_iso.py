"""The ISO 8601 text of a record's first time (``created_at``), each datetime object formatted
once.

A record's ``created_at`` is written again with every write of the record: a session's with
each of its commits, a slot's with each commit and in each checkpoint's slot state (its
digest's key). ``datetime.isoformat`` formats through C's printf, about 15,000 instructions a
call, for text that never changes: a ``datetime`` is immutable. :func:`iso` keeps the text by
the object (held, so its ``id`` is not reused while its entry lives) for the last 1,000 of
them. Times made fresh for each write (``updated_at``, a commit's own time) go through
:func:`fresh_iso`, which keeps only the last two: a turn's commit writes its session's and its
slot's ``updated_at`` as one object, and its lease check and memory rows another.
"""

from __future__ import annotations

from datetime import datetime

__all__ = ["fresh_iso", "iso"]

_TEXTS: dict[int, tuple[datetime, str]] = {}
_MAX = 1_000
_LAST: tuple[datetime | None, str, datetime | None, str] = (None, "", None, "")


def iso(moment: datetime) -> str:
    """``moment.isoformat()``, formatted once per object (see the module docstring).

    Example:
        >>> from datetime import UTC, datetime
        >>> made = datetime(2026, 12, 2, 3, 4, 5, 6, tzinfo=UTC)
        >>> iso(made) == made.isoformat() == iso(made)
        True
    """
    found = _TEXTS.get(id(moment))
    if found is not None and found[0] is moment:
        return found[1]
    text = moment.isoformat()
    if len(_TEXTS) >= _MAX:
        _TEXTS.clear()
    _TEXTS[id(moment)] = (moment, text)
    return text


def fresh_iso(moment: datetime) -> str:
    """``moment.isoformat()``, formatted once while the object is one of the last two
    formatted (see the module docstring: a commit writes two times, each twice, in turn).

    Example:
        >>> from datetime import UTC, datetime
        >>> now = datetime.now(UTC)
        >>> fresh_iso(now) == now.isoformat() == fresh_iso(now)
        True
    """
    global _LAST
    last = _LAST  # (one read: another thread may replace it)
    if last[0] is moment:
        return last[1]
    if last[2] is moment:
        return last[3]
    text = moment.isoformat()
    _LAST = (moment, text, last[0], last[1])
    return text
