"""Shared pieces of the OpenAPI document: the problem schema and the error responses."""

from __future__ import annotations

from typing import Any

__all__ = ["ERRORS", "ID_PATTERN", "PROBLEM_SCHEMA"]

ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
    },
}


def _problem(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/problem+json": {"schema": PROBLEM_SCHEMA}},
    }


ERRORS: dict[int | str, dict[str, Any]] = {
    400: _problem("Malformed request (bad JSON, unknown or out-of-range fields)"),
    401: _problem("No or wrong bearer token"),
    403: _problem("A cookie-authenticated change without the page header"),
    404: _problem("No such session, run, interrupt, checkpoint or agent"),
    409: _problem("Conflicts with the current state (already resolved, wrong run)"),
    410: _problem("The pending call expired"),
    413: _problem("The request body is over the limit"),
    422: _problem("Well-formed but unusable: an invalid snapshot or stored state"),
}
