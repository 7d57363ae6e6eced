"""``agcore-lab serve``: the engine over HTTP (FastAPI + uvicorn, the ``serve`` extra).

``create_app(manager)`` builds the ASGI app; ``agcore-lab serve`` runs it from the command
line; ``%agcore serve`` runs it in the background of a notebook. See ``docs/serve.md``.

The names below load on first use, so ``agcore-lab --help`` works without the extra; using
them needs FastAPI and uvicorn (``pip install "agcore_lab[serve]"``). ``import agcore_lab``
never imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agcore_lab.serve.app import create_app
    from agcore_lab.serve.background import BackgroundServer
    from agcore_lab.serve.limits import Limits

__all__ = ["BackgroundServer", "Limits", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from agcore_lab.serve.app import create_app

        return create_app
    if name == "BackgroundServer":
        from agcore_lab.serve.background import BackgroundServer

        return BackgroundServer
    if name == "Limits":
        from agcore_lab.serve.limits import Limits

        return Limits
    raise AttributeError(f"module 'agcore_lab.serve' has no attribute {name!r}")
