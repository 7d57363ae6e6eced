"""Who may call the service: a bearer token, or the approval page's cookie.

The token is compared in constant time (``hmac.compare_digest``) and never written anywhere:
not in logs, not in error details, not in the cookie. The cookie holds a keyed digest of the
token, so stealing it from a browser does not reveal the token, and changing the token
invalidates every cookie. A request authenticated by the cookie that changes something must
also carry ``X-Agcore-Page: 1``: a header a cross-site form or image cannot add, so another
site cannot make a logged-in browser approve a call (the cookie is ``SameSite=Strict`` too).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from starlette.requests import Request

from agcore_lab.errors import ConfigurationError

__all__ = ["COOKIE_NAME", "PAGE_HEADER", "Authenticator", "is_loopback"]

COOKIE_NAME = "agcore_session"
PAGE_HEADER = "x-agcore-page"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    return host in _LOOPBACK or host.startswith("127.")


class AuthFailure(Exception):
    """Raised by :meth:`Authenticator.check`; mapped to 401 or 403 with a problem body."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class Authenticator:
    """Checks requests against one token (``None`` with ``no_auth``: everyone may call).

    Args:
        token: The shared secret clients send as ``Authorization: Bearer <token>``.
        no_auth: Accept every request; only allowed with ``token=None``.
    """

    token: str | None
    no_auth: bool = False

    def __post_init__(self) -> None:
        if self.token is None and not self.no_auth:
            raise ConfigurationError(
                "the service needs a token (token=... or AGCORE_TOKEN); pass no_auth=True "
                "(--no-auth) to serve without one on a loopback host"
            )
        if self.token is not None and self.no_auth:
            raise ConfigurationError("give a token or no_auth=True, not both")
        if self.token is not None and len(self.token) < 4:
            raise ConfigurationError("the token is too short: use at least 4 characters")

    def cookie_value(self) -> str:
        """What the login form stores in the browser: a digest of the token, never the token."""
        key = (self.token or "").encode()
        return hmac.new(key, b"agcore-lab approval page", hashlib.sha256).hexdigest()

    def token_matches(self, given: str) -> bool:
        """Constant-time comparison of ``given`` with the token."""
        if self.token is None:
            return True
        return hmac.compare_digest(given.encode(), self.token.encode())

    def check(self, request: Request) -> None:
        """Let the request through, or raise :class:`AuthFailure` (401: no or wrong
        credentials; 403: a cookie request that changes state without the page header)."""
        if self.no_auth:
            return
        header = request.headers.get("authorization", "")
        if header:
            scheme, _, value = header.partition(" ")
            if scheme.lower() != "bearer" or not value.strip():
                raise AuthFailure(401, "use 'Authorization: Bearer <token>'")
            if not self.token_matches(value.strip()):
                raise AuthFailure(401, "the bearer token is not valid")
            return
        cookie = request.cookies.get(COOKIE_NAME)
        if cookie is None:
            raise AuthFailure(401, "authentication required: send 'Authorization: Bearer <token>'")
        if not hmac.compare_digest(cookie.encode(), self.cookie_value().encode()):
            raise AuthFailure(401, "the login has expired or the token changed; log in again")
        if request.method not in _SAFE_METHODS and request.headers.get(PAGE_HEADER) != "1":
            raise AuthFailure(403, f"a request authenticated by cookie must send {PAGE_HEADER}: 1")
