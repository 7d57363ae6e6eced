"""The bounds of ``agcore-lab serve``: request size, text lengths, page sizes.

Every number a client sends is bounded, so no request can make the service hold unbounded
memory or return an unbounded page. The defaults are documented in ``docs/serve.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True)
class Limits:
    """What one request may ask for.

    Attributes:
        max_body_bytes: Largest request body (a snapshot import is the biggest); larger
            bodies get 413 before any of it is parsed.
        max_text_chars: Longest user text of a turn.
        max_reason_chars: Longest rejection reason.
        max_label_chars: Longest checkpoint label.
        default_page: Items in a page when ``limit`` is not given.
        max_page: Largest ``limit`` of a listing.
        poll_seconds: How often the approval page refreshes itself.

    Example:
        >>> Limits(max_text_chars=1000).max_page
        500
    """

    max_body_bytes: int = 4 * 1024 * 1024
    max_text_chars: int = 100_000
    max_reason_chars: int = 2_000
    max_label_chars: int = 200
    default_page: int = 100
    max_page: int = 500
    poll_seconds: float = 2.0
