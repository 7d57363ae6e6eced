"""The approval page: server-rendered, escaped, self-contained, locked down by CSP."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from tests.unit.serve.conftest import Lab

EVIL = '<img src=x onerror="alert(1)">'


def test_the_page_lists_pending_calls_with_everything_escaped(lab: Lab, client: TestClient) -> None:
    sid, call = lab.interrupted(client)
    # A second call whose arguments come from a hostile model.
    other = lab.session(client)
    store = lab.manager.store
    pending = store.get_pending(call["interrupt_id"])
    assert pending is not None
    from agcore_lab.store._approvals import insert_pending

    hostile = pending.model_copy(
        update={
            "interrupt_id": "int_evil",
            "session_id": other,
            "tool_args": {"to": EVIL, "amount": "</pre><script>alert(2)</script>"},
        }
    )
    with store._write() as conn:  # type: ignore[attr-defined]
        insert_pending(conn, hostile)
    page = client.get("/approve")
    assert page.status_code == 200
    html = page.text
    assert EVIL not in html and "<script>alert(2)" not in html
    assert "&lt;img src=x onerror=" in html and "&lt;/pre&gt;&lt;script&gt;" in html
    assert call["interrupt_id"] in html and sid in html and "transfer" in html
    for button in ("Approve", "Approve edited", "Reject"):
        assert f">{button}</button>" in html
    assert "never" in html  # time left of a call without expiry
    rows = client.get("/approve/rows").text
    assert rows.count("<tr ") == 2 and EVIL not in rows


def test_the_page_loads_nothing_from_elsewhere_and_has_a_strict_csp(
    lab: Lab, client: TestClient
) -> None:
    page = client.get("/approve")
    policy = page.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy)
    assert nonce is not None and "default-src 'none'" in policy
    assert f'<script nonce="{nonce.group(1)}">' in page.text
    assert "http://" not in page.text and "https://" not in page.text and " src=" not in page.text
    assert page.headers["cache-control"] == "no-store"
    assert client.get("/approve").headers["content-security-policy"] != policy  # fresh nonce


def test_an_empty_queue_says_so(client: TestClient) -> None:
    assert "No calls are waiting" in client.get("/approve").text
