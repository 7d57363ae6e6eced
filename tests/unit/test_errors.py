"""The error tree: context in messages, RFC 7807 problem details, familiar base classes."""

from __future__ import annotations

import pytest

import agcore_lab
from agcore_lab import errors
from agcore_lab.errors import (
    AgcoreError,
    AgentRunError,
    AsyncBridgeError,
    ConflictError,
    GoneError,
    InvalidInputError,
    MaxToolRoundsError,
    ModelError,
    ModelHTTPError,
    NotFoundError,
    ProblemError,
    SessionNotFoundError,
    SlotNotFoundError,
    StorageError,
    UnprocessableError,
    UserError,
)


@pytest.mark.parametrize(
    ("error", "status", "title", "slug"),
    [
        (
            SessionNotFoundError("no such session", session_id="ses_1"),
            404,
            "Not found",
            "not-found",
        ),
        (ConflictError("already resolved", interrupt_id="int_9"), 409, "Conflict", "conflict"),
        (GoneError("expired", interrupt_id="int_3"), 410, "Gone", "gone"),
        (
            UnprocessableError("snapshot version 1", checkpoint_id="ckpt_7"),
            422,
            "Unprocessable entity",
            "unprocessable-entity",
        ),
    ],
)
def test_to_problem_has_the_rfc_7807_fields(
    error: ProblemError, status: int, title: str, slug: str
) -> None:
    problem = error.to_problem()
    assert problem == {
        "type": f"https://agcore-lab.dev/problems/{slug}",
        "title": title,
        "status": status,
        "detail": str(error),
        "instance": next(iter(error.context.values())),
    }
    assert error.status == status


def test_problem_instance_is_explicit_or_the_first_id_or_absent() -> None:
    error = ConflictError("wrong run", reason="mismatch", run_id="run_1", session_id="ses_1")
    assert error.to_problem()["instance"] == "run_1"
    assert error.to_problem(instance="/runs/run_1")["instance"] == "/runs/run_1"
    assert "instance" not in ConflictError("no ids here", reason="x").to_problem()


def test_str_includes_the_context_and_drops_none() -> None:
    error = SlotNotFoundError("no slot 'x'", session_id="ses_1", slot_id="x", checkpoint_id=None)
    assert str(error) == "no slot 'x' (session_id='ses_1', slot_id='x')"
    assert error.context == {"session_id": "ses_1", "slot_id": "x"}
    assert error.session_id == "ses_1" and error.slot_id == "x"  # type: ignore[attr-defined]
    assert error.message == "no slot 'x'"
    assert str(AgcoreError("plain")) == "plain"


def test_not_found_is_a_key_error_with_a_readable_message() -> None:
    error = SessionNotFoundError("no such session", session_id="s")
    assert isinstance(error, KeyError) and isinstance(error, NotFoundError)
    assert str(error) == "no such session (session_id='s')"  # not quoted like a KeyError
    with pytest.raises(KeyError):
        raise error


def test_familiar_base_classes() -> None:
    assert issubclass(InvalidInputError, ValueError) and issubclass(InvalidInputError, UserError)
    assert issubclass(AsyncBridgeError, RuntimeError) and issubclass(AsyncBridgeError, UserError)
    assert issubclass(SlotNotFoundError, NotFoundError)
    assert issubclass(MaxToolRoundsError, AgentRunError)
    assert issubclass(ModelHTTPError, ModelError)
    assert not issubclass(StorageError, ProblemError)


def test_every_error_derives_from_the_root_and_is_drawn_in_the_docstring() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, AgcoreError)
        assert f" {name}" in doc, name


def test_errors_are_exported_from_the_package() -> None:
    for name in ["AgcoreError", "NotFoundError", "ConflictError", "InvalidInputError"]:
        assert getattr(agcore_lab, name) is getattr(errors, name)


def test_model_http_error_keeps_status_and_a_body_excerpt() -> None:
    error = ModelHTTPError("rate limited", status_code=429, body="x" * 2000)
    assert error.status_code == 429 and len(error.body) == 500
    assert "status_code=429" in str(error)


def test_max_tool_rounds_error_carries_the_partial_result() -> None:
    error = MaxToolRoundsError("too many rounds", partial={"reply": ""}, session_id="s")
    assert error.partial == {"reply": ""}
    assert error.context == {"session_id": "s"}
