"""Records built without validation (store/_trusted.py) are the records a validation gives."""

from __future__ import annotations

from agcore_lab.engine.dispatch_types import SubTaskResult
from agcore_lab.llm.messages import UserMessage
from agcore_lab.llm.usage import Usage
from agcore_lab.store._trusted import trusted


def test_a_trusted_record_lists_its_fields_in_the_models_order() -> None:
    # Given in another order than the model declares them (defaults first in the template):
    # the repr a notebook prints and the dump's key order must be a validated record's.
    fields = {
        "summary": "s",
        "child_id": "ses_1",
        "usage": Usage(prompt_tokens=1, completion_tokens=2, requests=1),
        "task": "t",
        "response": "r",
    }
    built = trusted(SubTaskResult, fields)
    validated = SubTaskResult(**fields)
    assert repr(built) == repr(validated)
    assert list(built.model_dump()) == list(validated.model_dump())
    assert built == validated and built.model_fields_set == validated.model_fields_set


def test_defaults_and_factories_fill_what_is_not_given() -> None:
    built = trusted(UserMessage, {"content": "hi", "id": "msg_1"})
    validated = UserMessage(content="hi", id="msg_1", created_at=built.created_at)
    assert built.metadata == {} and built.metadata is not trusted(UserMessage, {}).metadata
    assert repr(built) == repr(validated)
    assert built.model_fields_set == {"content", "id"}


def test_a_required_field_not_given_stays_unset() -> None:
    built = trusted(SubTaskResult, {"task": "t"})
    assert "child_id" not in built.__dict__ and built.task == "t"
