"""Client processes for the HTTP resume race: each waits at the barrier, then resumes."""

from __future__ import annotations

from typing import Any

import httpx


def resume_rounds(
    base_url: str, token: str, number: int, inbox: Any, barrier: Any, out: Any
) -> None:
    """For each URL in ``inbox`` (``None`` ends): pass the barrier with the others, POST an
    approval, and report ``(round, number, status, content type)``."""
    with httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        client.get("/health")  # connect before the first round
        while True:
            task = inbox.get()
            if task is None:
                return
            round_no, url = task
            barrier.wait()
            try:
                answer = client.post(url, json={"decision": "approve"})
                out.put((round_no, number, answer.status_code, answer.headers["content-type"]))
            except Exception as exc:  # reported, so the test fails with the reason
                out.put((round_no, number, -1, repr(exc)))
