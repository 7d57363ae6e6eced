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
    error = SlotNotFoundError("no such slot", session_id="s")
    assert isinstance(error, KeyError) and isinstance(error, NotFoundError)
    assert str(error) == "no such slot (session_id='s')"  # not quoted like a KeyError
    with pytest.raises(KeyError):
        raise error


def test_familiar_base_classes() -> None:
    assert issubclass(InvalidInputError, ValueError) and issubclass(InvalidInputError, UserError)
    assert issubclass(AsyncBridgeError, RuntimeError) and issubclass(AsyncBridgeError, UserError)
    assert issubclass(SlotNotFoundError, NotFoundError)
    assert issubclass(MaxToolRoundsError, AgentRunError)
    assert issubclass(ModelHTTPError, ModelError)
    assert not issubclass(StorageError, ProblemError)


def _all_subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_all_subclasses(sub)}
    return found


def _import_every_module() -> None:
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(agcore_lab.__path__, "agcore_lab."):
        if info.name != "agcore_lab.__main__":
            importlib.import_module(info.name)


def test_every_agcore_error_is_defined_in_errors_and_drawn_in_its_tree() -> None:
    _import_every_module()
    doc = errors.__doc__ or ""
    classes = {c for c in _all_subclasses(AgcoreError) if c.__module__.startswith("agcore_lab")}
    assert len(classes) >= 24
    for cls in classes:
        assert cls.__module__ == "agcore_lab.errors", f"{cls.__qualname__} is in {cls.__module__}"
        assert cls.__name__ in errors.__all__, cls.__name__
        assert f" {cls.__name__}" in doc, cls.__name__
        assert getattr(agcore_lab, cls.__name__, cls) is cls


def test_every_name_in_errors_all_is_an_agcore_error() -> None:
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), AgcoreError), name


def test_the_moved_errors_are_the_same_classes_where_they_used_to_live() -> None:
    from agcore_lab.engine.checkpointer import CheckpointNotFoundError
    from agcore_lab.engine.dispatch_types import SubTaskError
    from agcore_lab.engine.manager import AgentNotFoundError
    from agcore_lab.kg.types import EntityNotFoundError
    from agcore_lab.store._approvals import RunNotFoundError

    assert CheckpointNotFoundError is errors.CheckpointNotFoundError
    assert SubTaskError is errors.SubTaskError
    assert AgentNotFoundError is errors.AgentNotFoundError
    assert EntityNotFoundError is errors.EntityNotFoundError
    assert RunNotFoundError is errors.RunNotFoundError


def test_dispatch_failed_is_an_event_and_the_old_name_an_alias() -> None:
    from agcore_lab.engine.dispatch_types import DispatchError, DispatchFailed

    assert DispatchError is DispatchFailed and agcore_lab.DispatchFailed is DispatchFailed
    assert not issubclass(DispatchFailed, BaseException)


def test_session_not_found_says_what_to_do_next() -> None:
    error = SessionNotFoundError("no such session in the store", session_id="ses_x")
    assert "store.list_sessions()" in str(error) and "create" in str(error)
    assert str(error).count("list_sessions") == 1  # not added twice when re-raised with it


def test_store_and_bundle_misuse_is_one_class_everywhere() -> None:
    from agcore_lab import (
        Agent,
        AgentSession,
        RuntimeBundle,
        ScriptedModel,
        SessionManager,
        SqliteStore,
    )
    from agcore_lab.errors import ConfigurationError

    one, other = SqliteStore(":memory:"), SqliteStore(":memory:")
    bundle = RuntimeBundle(store=other)
    with pytest.raises(ConfigurationError):
        SessionManager(one, bundle=bundle)
    with pytest.raises(ConfigurationError):
        AgentSession(Agent(name="a", model=ScriptedModel()), store=one, bundle=bundle)
    assert one.list_sessions() == [] and other.list_sessions() == []


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
