"""Auth (bearer token, the page's cookie, no-auth) and bounded bodies."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from agcore_lab.errors import ConfigurationError
from agcore_lab.serve import Limits
from agcore_lab.serve.auth import COOKIE_NAME, Authenticator
from tests.unit.serve.conftest import TOKEN, Lab, assert_problem, resume_url


def test_every_api_route_needs_the_token_and_it_never_leaks(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    anonymous = lab.client(auth=False)
    wrong = TestClient(lab.app(), headers={"Authorization": "Bearer " + TOKEN + "x"})
    basic = TestClient(lab.app(), headers={"Authorization": "Basic " + TOKEN})
    for client in (anonymous, wrong, basic):
        for method, path in (
            ("POST", "/sessions"),
            ("GET", "/sessions"),
            ("GET", "/pending"),
            ("POST", "/sessions/ses_x/turns"),
            ("POST", "/snapshots"),
            ("GET", "/approve/rows"),
        ):
            answer = client.request(method, path, json={"agent": "bank"})
            body = assert_problem(answer, 401, "unauthorized")
            assert answer.headers["www-authenticate"].startswith("Bearer")
            assert TOKEN not in answer.text and TOKEN not in str(answer.headers)
    assert lab.manager.store.list_sessions() == []
    assert TOKEN not in caplog.text
    assert anonymous.get("/health").json() == {"status": "ok"}
    assert "token" not in body["detail"].lower() or "bearer" in body["detail"].lower()


def test_the_login_form_sets_a_cookie_that_is_not_the_token(lab: Lab) -> None:
    browser = lab.client(auth=False)
    browser.headers["Accept"] = "text/html,application/xhtml+xml"
    login = browser.get("/approve")
    assert login.status_code == 401 and 'name="token"' in login.text
    refused = browser.post("/login", data={"token": "nope"}, follow_redirects=False)
    assert refused.status_code == 401 and COOKIE_NAME not in refused.headers.get("set-cookie", "")
    assert "not valid" in refused.text
    assert_problem(lab.client(auth=False).get("/approve"), 401)  # not a browser: a problem
    done = browser.post("/login", data={"token": TOKEN}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "approve"
    cookie = done.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and TOKEN not in cookie
    assert browser.get("/approve").status_code == 200
    assert browser.get("/pending").status_code == 200


def test_a_cookie_change_needs_the_page_header(lab: Lab) -> None:
    with lab.client() as api:
        sid, call = lab.interrupted(api)
    browser = lab.client(auth=False)
    browser.post("/login", data={"token": TOKEN})
    url = resume_url(sid, call)
    assert_problem(browser.post(url, json={"decision": "approve"}), 403, "forbidden")
    assert lab.runs == []
    answer = browser.post(url, json={"decision": "approve"}, headers={"X-Agcore-Page": "1"})
    assert answer.status_code == 200 and lab.runs == [{"to": "u2", "amount": 100}]
    forged = lab.client(auth=False)
    forged.cookies.set(COOKIE_NAME, "forged")
    assert_problem(forged.get("/pending"), 401)


def test_no_auth_needs_saying_so_and_excludes_a_token(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGCORE_TOKEN", raising=False)
    with pytest.raises(ConfigurationError, match="needs a token"):
        lab.app(token=None)
    monkeypatch.setenv("AGCORE_TOKEN", "from-the-env")
    from_env = TestClient(lab.app(token=None), headers={"Authorization": "Bearer from-the-env"})
    assert from_env.get("/sessions").status_code == 200
    with pytest.raises(ConfigurationError, match="not both"):
        lab.app(no_auth=True)
    with pytest.raises(ConfigurationError, match="too short"):
        Authenticator(token="ab")
    open_app = lab.app(token=None, no_auth=True)
    assert TestClient(open_app).post("/sessions", json={"agent": "bank"}).status_code == 201


def test_bodies_over_the_limit_are_413_before_anything_is_read(lab: Lab) -> None:
    with lab.client(lab.app(limits=Limits(max_body_bytes=200))) as client:
        big = {"agent": "bank", "pad": "x" * 300}
        body = assert_problem(client.post("/sessions", json=big), 413)
        assert "200 bytes" in body["detail"]

        def chunks():  # no Content-Length: counted as it arrives
            yield b'{"agent": "bank", "pad": "'
            for _ in range(10):
                yield b"x" * 50
            yield b'"}'

        streamed = client.post(
            "/sessions", content=chunks(), headers={"content-type": "application/json"}
        )
        assert_problem(streamed, 413)
        assert client.post("/sessions", json={"agent": "bank"}).status_code == 201
    assert len(lab.manager.store.list_sessions()) == 1


def test_page_sizes_are_bounded_by_the_limits(lab: Lab) -> None:
    with lab.client(lab.app(limits=Limits(max_page=5, default_page=2))) as client:
        for _ in range(3):
            lab.session(client)
        assert client.get("/sessions").json()["limit"] == 2
        assert len(client.get("/sessions", params={"limit": 5}).json()["items"]) == 3
        assert_problem(client.get("/sessions", params={"limit": 6}), 400, "invalid-input")


def test_unknown_routes_and_methods_are_problem_documents(client: TestClient) -> None:
    assert_problem(client.get("/nowhere"), 404)
    assert_problem(client.put("/sessions"), 405)
