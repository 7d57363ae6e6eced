"""A throwaway PostgreSQL server for tests: Debian's server binaries, a temporary directory,
127.0.0.1 and a free port, stopped and removed at the end.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user (which
Debian's package creates); as any other user it runs as that user.

Example:
    >>> with TemporaryPostgres() as url:           # doctest: +SKIP
    ...     store = PostgresStore(url)
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

__all__ = ["PostgresUnavailable", "TemporaryPostgres", "find_pg_bin"]


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


def find_pg_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/*/bin`` with ``initdb``, or ``None``."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: [int(x) for x in Path(p).parent.parent.name.split(".") if x.isdigit()],
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TemporaryPostgres:
    """``with TemporaryPostgres() as url:`` — a fresh server and database ``agcore``."""

    def __init__(self, database: str = "agcore") -> None:
        self.database = database
        self.directory: Path | None = None
        self.url = ""
        self._bin: Path | None = None
        self._user: str | None = None

    def _run(self, *args: str) -> None:
        assert self._bin is not None
        command = [str(self._bin / args[0]), *args[1:]]
        if self._user is not None:
            command = ["runuser", "-u", self._user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise PostgresUnavailable(
                f"{args[0]} failed ({done.returncode}): {(done.stderr or done.stdout)[-800:]}"
            )

    def start(self) -> str:
        """Start the server; return its URL."""
        self._bin = find_pg_bin()
        if self._bin is None:
            raise PostgresUnavailable(
                "no PostgreSQL server binaries (install Debian's postgresql-15 package)"
            )
        self.directory = Path(tempfile.mkdtemp(prefix="agcore-pg-"))
        superuser = "postgres"
        if os.geteuid() == 0:
            try:
                entry = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise PostgresUnavailable("running as root and there is no postgres user") from exc
            os.chown(self.directory, entry.pw_uid, entry.pw_gid)
            self._user = "postgres"
        port = _free_port()
        data, log = self.directory / "data", self.directory / "log"
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", superuser, "-E", "UTF8")
        self._run(
            "pg_ctl", "-D", str(data), "-l", str(log), "-w", "-t", "60",
            "-o", f"-k {self.directory} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        )  # fmt: skip
        self._run("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", superuser, self.database)
        self.url = f"postgresql://{superuser}@127.0.0.1:{port}/{self.database}"
        return self.url

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        if self.directory is None:
            return
        try:
            if (self.directory / "data" / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.directory / "data"), "-m", "immediate", "-w",
                          "stop")  # fmt: skip
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __enter__(self) -> str:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
