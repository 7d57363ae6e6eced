"""Run the service in a background thread (``%agcore serve``, tests, benchmarks).

uvicorn's server runs its own event loop in a daemon thread. With ``create_app(...,
engine_loop="bridge")`` the engine still runs on agcore_lab's background loop, so the same
manager can be used from notebook cells at the same time.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from agcore_lab.errors import ConfigurationError

__all__ = ["BackgroundServer"]


class BackgroundServer:
    """An ASGI app served by uvicorn on a daemon thread.

    Args:
        app: The ASGI app (from :func:`~agcore_lab.serve.create_app`).
        host: The interface to listen on.
        port: The port; ``0`` picks a free one (see :attr:`port` after :meth:`start`).

    Example:
        >>> from agcore_lab import SessionManager
        >>> from agcore_lab.serve import create_app
        >>> server = BackgroundServer(create_app(SessionManager(), no_auth=True)).start()
        >>> server.url.startswith("http://127.0.0.1:")
        True
        >>> server.stop()
    """

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = app
        self.host = host
        self.port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL (``http://host:port``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server thread is serving."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 10.0) -> BackgroundServer:
        """Start serving and wait until the socket accepts connections.

        Raises:
            ConfigurationError: The port is taken or the server did not start in time.
        """
        import uvicorn

        if self.port:
            self._check_free()
        # uvicorn binds the socket itself: handing it a socket bound here made every
        # request wait ~40 ms (measured; a delayed-ACK stall) instead of well under 1 ms.
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self.port,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # not the main thread
        self._thread = threading.Thread(target=self._server.run, name="agcore-serve", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ConfigurationError(
                    f"the server did not start on {self.host}:{self.port}", port=self.port
                )
            time.sleep(0.01)
        self.port = int(self._server.servers[0].sockets[0].getsockname()[1])
        return self

    def _check_free(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((self.host, self.port))
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot listen on {self.host}:{self.port}: {exc.strerror}; pick another port",
                    port=self.port,
                ) from exc

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving (open connections are closed) and wait for the thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None

    def __enter__(self) -> BackgroundServer:
        return self.start() if not self.running else self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"BackgroundServer({self.url!r}, {state})"
