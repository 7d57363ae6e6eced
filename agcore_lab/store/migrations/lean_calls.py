"""Schema 12 (issue 15, recording under 5% of a turn): a turn's common call rides on its
answer's ``chain_nodes`` row.

The usual model call of a turn — answered with a message the turn stores anyway, at home right
after the request's history — is kept as one compact column (``call``) of that message's row,
so recording it touches no b-tree the turn does not write anyway. Every other call (failed
calls, summaries, redacted calls, calls whose hash was stored as sent, responses not stored as
they are) keeps its row in the old table, renamed ``call_rows``. ``model_calls`` becomes a view
over both with exactly the old columns, so ``pd.read_sql("select * from model_calls", conn)``
reads as before. See :mod:`agcore_lab.store._calls_lean` for the ``call`` column's layout.

The conversion is in place and moves nothing: rows stored before stay table rows (they read
back exactly as they were).
"""

from __future__ import annotations

import sqlite3

from agcore_lab.store._node_keys import digits_sql
from agcore_lab.store.migrations._run import run as _run

__all__ = ["m012_lean_calls"]

_CALL_COLUMNS = (
    "session_id, call_id, slot_id, turn_index, kind, model, status, prompt_tokens, "
    "completion_tokens, cost_usd, started_us, latency_us, ttft_us, finish_reason, "
    "request_hash, anchor_node, response_id, parts_json, detail_json"
)
_MASK = (1 << 20) - 1
_M012_VIEW = f"""
CREATE VIEW model_calls AS
    SELECT {_CALL_COLUMNS} FROM call_rows
    UNION ALL
    SELECT s.session_id AS session_id,
           'call_' || {digits_sql("n.node - (n.c >> 20)", f"n.c & {_MASK}")} AS call_id,
           json_extract(n.call, '$[2]') AS slot_id,
           json_extract(n.call, '$[1]') AS turn_index,
           'turn' AS kind,
           json_extract(n.call, '$[3]') AS model,
           'ok' AS status,
           json_extract(n.call, '$[4]') AS prompt_tokens,
           json_extract(n.call, '$[5]') AS completion_tokens,
           json_extract(n.call, '$[6]') AS cost_usd,
           (n.node - (n.c >> 20)) / 1000 - json_extract(n.call, '$[7]') AS started_us,
           json_extract(n.call, '$[8]') AS latency_us,
           json_extract(n.call, '$[11]') AS ttft_us,
           json_extract(n.call, '$[9]') AS finish_reason,
           x'' AS request_hash,
           NULL AS anchor_node,
           'msg_' || {digits_sql("n.node", "n.tail")} AS response_id,
           json_extract(n.call, '$[10]') AS parts_json,
           json_extract(n.call, '$[12]') AS detail_json
    FROM (SELECT node, tail, session, call, json_extract(call, '$[0]') AS c
          FROM chain_nodes WHERE call IS NOT NULL) n
    JOIN session_keys s ON s.key = n.session
"""


def m012_lean_calls(conn: sqlite3.Connection) -> None:
    """Schema 12: the ``call`` column of ``chain_nodes``, ``call_rows`` and the
    ``model_calls`` view (see the module docstring), converting a file in place."""
    _run(
        conn,
        "ALTER TABLE chain_nodes ADD COLUMN call TEXT;\n"
        "ALTER TABLE model_calls RENAME TO call_rows",
    )
    _run(conn, _M012_VIEW)
