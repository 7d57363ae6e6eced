"""The approval page: ``GET /approve``, its rows for polling, and the login form.

The page authenticates like the API (``Authorization: Bearer``) or with the cookie the login
form sets. Without either a browser (``Accept: text/html``) gets the login form with status
401; other clients get the usual 401 problem document.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from agcore_lab.serve.auth import COOKIE_NAME, AuthFailure
from agcore_lab.serve.context import ServeContext, authorized, context
from agcore_lab.serve.page_render import csp, login_page, new_nonce, page, rows
from agcore_lab.serve.problems import problem, problem_response

__all__ = ["router"]

router = APIRouter(tags=["approval page"], include_in_schema=True)
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


def _wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "").lower()


def _refused(request: Request, detail: str, *, failed: bool) -> Response:
    # A browser gets the login form; any other client the usual problem document.
    if not _wants_html(request):
        body = problem(401, detail, instance=request.url.path)
        return problem_response(body, {"WWW-Authenticate": 'Bearer realm="agcore-lab"'})
    nonce = new_nonce()
    return _html(login_page(nonce, failed=failed), nonce, status=401)


def _html(text: str, nonce: str, status: int = 200) -> HTMLResponse:
    headers = {**_HEADERS, "Content-Security-Policy": csp(nonce)}
    return HTMLResponse(text, status_code=status, headers=headers)


@router.get("/approve", response_class=HTMLResponse)
async def approve_page(request: Request) -> Response:
    """The page listing pending calls with Approve / Edit / Reject (a browser without a login
    gets the login form, other clients a 401 problem)."""
    ctx = context(request)
    try:
        ctx.auth.check(request)
    except AuthFailure as failure:
        return _refused(request, failure.detail, failed=False)
    nonce = new_nonce()
    calls = ctx.manager.pending_calls()
    return _html(page(calls, poll_seconds=ctx.limits.poll_seconds, nonce=nonce), nonce)


@router.get("/approve/rows", response_class=HTMLResponse)
async def approve_rows(ctx: Annotated[ServeContext, Depends(authorized)]) -> HTMLResponse:
    """The page's table body, rendered now (the page polls it)."""
    return HTMLResponse(rows(ctx.manager.pending_calls()), headers=_HEADERS)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    """Check the form's token; on success set the cookie and go to the page."""
    ctx = context(request)
    form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=5)
    token = (form.get("token") or [""])[0]
    if ctx.auth.no_auth or (token and ctx.auth.token_matches(token)):
        response = RedirectResponse("approve", status_code=303)
        response.set_cookie(
            COOKIE_NAME,
            ctx.auth.cookie_value(),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            max_age=12 * 3600,
        )
        return response
    return _refused(request, "that token is not valid", failed=True)


@router.post("/logout")
async def logout() -> Response:
    """Forget the cookie."""
    response = RedirectResponse("approve", status_code=303)
    response.delete_cookie(COOKIE_NAME)
    return response
