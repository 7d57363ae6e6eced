"""Columns of checkpoints built from their lean rows (SQLite, schema 11), a column at a time.

``Checkpointer.to_dataframe`` wants a few columns of many checkpoints. Their lean rows hold
integers (keys, offsets, codes); the text the old table kept — the ids and the time — is
written here for the whole column at once with numpy (the ids' base-32 digits as bytes, the
time as microseconds since the epoch), not a tuple and a string per row in Python.

Examples:
    >>> import numpy as np
    >>> ids = render_ids(np.array([1, 2**62], dtype=np.int64), np.array([5, 0]), "ckpt")
    >>> list(ids)
    ['ckpt_00000000000010005', 'ckpt_40000000000000000']
"""

from __future__ import annotations

import sqlite3
from functools import cache
from typing import TYPE_CHECKING, Any

from agcore_lab.store._node_keys import session_key

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = ["frame_columns", "head_ids", "parent_ids", "render_ids"]

_SOURCE_NAMES = {0: "auto", 1: "manual", 2: "fork", 3: "rollback"}
_SELECT = (
    "SELECT c.ckpt, c.tail, s.session_id, c.parent, c.parent_tail, c.turn_index, c.created, "
    "c.created_text, c.label, c.source, c.message_count, c.prompt_tokens, "
    "c.completion_tokens, c.cost_usd, c.agent, c.current_slot "
    "FROM checkpoint_rows c JOIN session_keys s ON s.key = c.session"
)


@cache
def _digits() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The alphabet as bytes, the shifts of a key's 13 digits (below 2^63) and a tail's 4."""
    import numpy as np  # lazy: keep `import agcore_lab` fast

    return (
        np.frombuffer(b"0123456789abcdefghjkmnpqrstvwxyz", dtype=np.uint8),
        np.arange(60, -1, -5, dtype=np.int64),
        np.arange(15, -1, -5, dtype=np.int64),
    )


def render_ids(keys: np.ndarray, tails: np.ndarray, prefix: str) -> np.ndarray:
    """The text ids (an object array of ``str``) of positive ``keys`` and their ``tails``:
    :func:`~agcore_lab.store._node_keys.render` over whole columns."""
    import numpy as np

    alphabet, key_shifts, tail_shifts = _digits()
    count = len(keys)
    width = len(prefix) + 18
    out = np.empty((count, width), dtype=np.uint8)
    out[:, : len(prefix) + 1] = np.frombuffer(f"{prefix}_".encode(), dtype=np.uint8)
    start = len(prefix) + 1
    out[:, start : start + 13] = alphabet[(keys[:, None] >> key_shifts) & 31]
    out[:, start + 13 :] = alphabet[(tails.astype(np.int64)[:, None] >> tail_shifts) & 31]
    texts: np.ndarray = out.view(f"S{width}").ravel().astype(f"U{width}").astype(object)
    return texts


def frame_columns(conn: sqlite3.Connection, session_id: str | None) -> dict[str, Any] | None:
    """The columns of ``checkpoint_frame.FRAME_COLUMNS`` of a session's checkpoints (or all),
    newest first, read from the lean rows; ``None`` where the ``checkpoints`` view must show
    them (an id kept as text, or a counter that is not a number: the view shows it as it is).
    ``created_at`` is a UTC ``DatetimeIndex``.
    """
    import numpy as np  # lazy: keep `import agcore_lab` fast

    if conn.execute("SELECT 1 FROM checkpoint_ids LIMIT 1").fetchone() is not None:
        return None
    params: tuple[Any, ...] = ()
    where = ""
    if session_id:
        session = session_key(conn, session_id, create=False)
        if session is None:
            return {}
        where, params = " WHERE c.session = ?", (session,)
    rows = conn.execute(f"{_SELECT}{where} ORDER BY c.ckpt DESC", params).fetchall()
    if not rows:
        return {}
    (
        keys,
        tails,
        sessions,
        parents,
        parent_tails,
        turns,
        created,
        created_text,
        labels,
        sources,
        counts,
        prompts,
        completions,
        costs,
        agents,
        slots,
    ) = zip(*rows, strict=True)
    if set(map(type, prompts)) != {int} or set(map(type, completions)) != {int}:
        return None
    key = np.fromiter(keys, dtype=np.int64, count=len(keys))
    names = dict(conn.execute("SELECT key, name FROM names").fetchall())
    return {
        "ckpt_id": render_ids(key, np.fromiter(tails, dtype=np.int64, count=len(keys)), "ckpt"),
        "session_id": sessions,
        "parent_ckpt_id": _parents(key, parents, parent_tails),
        "turn_index": turns,
        "created_at": _times(key, created, created_text),
        "label": labels,
        "source": [_SOURCE_NAMES.get(s, s) for s in sources],
        "message_count": counts,
        "prompt_tokens": prompts,
        "completion_tokens": completions,
        "total_tokens": np.add(prompts, completions),
        "cost_usd": costs,
        "agent_name": [names.get(a) for a in agents],
        "current_slot_id": [names.get(s) for s in slots],
    }


def _parents(key: np.ndarray, parents: tuple[Any, ...], tails: tuple[Any, ...]) -> np.ndarray:
    import numpy as np

    shown = np.full(len(key), None, dtype=object)
    has = np.fromiter((p is not None for p in parents), dtype=bool, count=len(parents))
    if has.any():
        offsets = np.fromiter((p for p in parents if p is not None), dtype=np.int64)
        parent_tails = np.fromiter((t for t in tails if t is not None), dtype=np.int64)
        shown[has] = render_ids(key[has] - offsets, parent_tails, "ckpt")
    return shown


def _given(
    values: tuple[Any, ...], tails: tuple[Any, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where both ``values`` and ``tails`` are given (not ``NULL``), and those of them as
    integers: a column at a time."""
    import numpy as np

    shown, tail = np.array(values, dtype=object), np.array(tails, dtype=object)
    null = np.array(None, dtype=object)
    given = np.not_equal(shown, null) & np.not_equal(tail, null)
    return given, shown[given].astype(np.int64), tail[given].astype(np.int64)


def parent_ids(key: np.ndarray, parents: tuple[Any, ...], tails: tuple[Any, ...]) -> list[Any]:
    """Each row's parent checkpoint id: ``None`` where its offset or its tail is ``NULL``."""
    import numpy as np

    given, offsets, parent_tails = _given(parents, tails)
    shown = np.full(len(key), None, dtype=object)
    if len(offsets):
        shown[given] = render_ids(key[given] - offsets, parent_tails, "ckpt")
    listed: list[Any] = shown.tolist()
    return listed


def head_ids(key: np.ndarray, heads: tuple[Any, ...], tails: tuple[Any, ...]) -> list[Any]:
    """Each row's flat slot head (a message or link node id): ``None`` where its offset or
    its tail is ``NULL``."""
    import numpy as np

    given, offsets, head_tails = _given(heads, tails)
    shown = np.full(len(key), None, dtype=object)
    if len(offsets):
        nodes = key[given] - offsets
        texts = render_ids(nodes, head_tails & 0xFFFFF, "msg")
        links = head_tails >= 1 << 20
        if links.any():
            texts[links] = render_ids(nodes[links], head_tails[links] & 0xFFFFF, "node")
        shown[given] = texts
    listed: list[Any] = shown.tolist()
    return listed


def _times(key: np.ndarray, created: tuple[Any, ...], texts: tuple[Any, ...]) -> pd.DatetimeIndex:
    """A checkpoint's time: its offset from its key's time (microseconds), or its text."""
    import numpy as np
    import pandas as pd

    flat = np.fromiter((c is not None for c in created), dtype=bool, count=len(created))
    micros = np.zeros(len(key), dtype=np.int64)
    micros[flat] = np.fromiter((c for c in created if c is not None), dtype=np.int64)
    micros[flat] += key[flat] // 1000
    moments = pd.DatetimeIndex(pd.to_datetime(micros, unit="us", utc=True))
    if flat.all():
        return moments
    shown = pd.Series(moments)
    others = ~flat
    text = pd.Series(np.asarray(texts, dtype=object)[others])
    shown[others] = pd.to_datetime(text, format="ISO8601", utc=True).to_numpy()
    return pd.DatetimeIndex(shown)


def shaped_rows(rows: list[tuple[Any, ...]], names: dict[int, str]) -> list[tuple[Any, ...]]:
    """Lean rows (``_sqlite_checkpoints._LEAN_SELECT``'s columns, no id kept as text) in the
    old columns (``_checkpoint_rows.COLUMNS``): their ids, times and one-slot / one-model
    JSON written a column at a time."""
    import numpy as np

    (
        keys,
        tails,
        sessions,
        parents,
        parent_tails,
        turns,
        created,
        created_text,
        labels,
        sources,
        counts,
        prompts,
        completions,
        costs,
        agents,
        slots,
        summary_turns,
        memories,
        heads,
        head_tails,
        states,
        models,
        requests,
        slots_json,
        spend_json,
        pending_json,
    ) = zip(*rows, strict=True)
    key = np.fromiter(keys, dtype=np.int64, count=len(keys))
    ids = render_ids(key, np.fromiter(tails, dtype=np.int64, count=len(keys)), "ckpt")
    slot_ids = [names.get(s) for s in slots]
    return list(
        zip(
            sessions,
            ids.tolist(),
            _parents(key, parents, parent_tails).tolist(),
            turns,
            _time_texts(key, created, created_text),
            labels,
            [_SOURCE_NAMES.get(s, s) for s in sources],
            counts,
            prompts,
            completions,
            costs,
            [names.get(a) for a in agents],
            slot_ids,
            summary_turns,
            memories,
            _slot_texts(key, slot_ids, heads, head_tails, states, slots_json, names),
            [
                text
                if model is None
                else f'{{"{names.get(model)}":[{prompt},{completion},{count},{cost!r}]}}'
                for text, model, prompt, completion, count, cost in zip(
                    spend_json, models, prompts, completions, requests, costs, strict=True
                )
            ],
            pending_json,
            strict=True,
        )
    )


def _time_texts(key: np.ndarray, created: tuple[Any, ...], texts: tuple[Any, ...]) -> list[Any]:
    """``created_at`` as the old table kept it: ``datetime.isoformat`` of the UTC time."""
    import numpy as np

    flat = np.fromiter((c is not None for c in created), dtype=bool, count=len(created))
    shown: list[Any] = list(texts)
    if not flat.any():
        return shown
    micros = np.fromiter((c for c in created if c is not None), dtype=np.int64) + key[flat] // 1000
    written = np.datetime_as_string(micros.astype("datetime64[us]"), unit="us").tolist()
    whole = (micros % 1_000_000 == 0).tolist()  # isoformat leaves out zero microseconds
    for index, text, second in zip(np.flatnonzero(flat).tolist(), written, whole, strict=True):
        shown[index] = f"{text[:-7] if second else text}+00:00"
    return shown


def _slot_texts(
    key: np.ndarray,
    slot_ids: list[Any],
    heads: tuple[Any, ...],
    head_tails: tuple[Any, ...],
    states: tuple[Any, ...],
    texts: tuple[Any, ...],
    names: dict[int, str],
) -> list[Any]:
    """``slots_json`` of rows whose one slot is in flat columns (``state`` set)."""
    import numpy as np

    shown: list[Any] = list(texts)
    flat = [i for i, state in enumerate(states) if state is not None]
    if not flat:
        return shown
    placed = [i for i in flat if heads[i] is not None]
    heads_of: dict[int, str] = {}
    if placed:
        at = np.array(placed, dtype=np.int64)
        offsets = np.fromiter((heads[i] for i in placed), dtype=np.int64, count=len(placed))
        tails = np.fromiter((head_tails[i] for i in placed), dtype=np.int64, count=len(placed))
        nodes = key[at] - offsets
        messages = render_ids(nodes, tails & 0xFFFFF, "msg").tolist()
        links = tails >= 1 << 20
        if links.any():
            linked = render_ids(nodes[links], tails[links] & 0xFFFFF, "node").tolist()
            for where, text in zip(np.flatnonzero(links).tolist(), linked, strict=True):
                messages[where] = text
        heads_of = dict(zip(placed, messages, strict=True))
    for i in flat:
        head = heads_of.get(i)
        shown_head = "null" if head is None else f'"{head}"'
        shown[i] = f'{{"{slot_ids[i]}":[{shown_head},"{names.get(states[i])}"]}}'
    return shown
