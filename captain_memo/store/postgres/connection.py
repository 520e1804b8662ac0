"""Connections to the team store: one per thread, opened on first use; errors without secrets.

A connection string holds a password more often than not: it is shown masked (``masked_url``)
and every error met on the way out has the string and its password removed from its text.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from contextlib import contextmanager
from urllib.parse import unquote, urlsplit

from captain_memo.errors import StoreError
from captain_memo.urls import masked_url

# Seconds to wait for the server when connecting; a down team store must not hang a command.
CONNECT_TIMEOUT_S = 5


def shown(dsn: str) -> str:
    """The connection string as it may be printed: no user, password or parameter values."""
    if "://" in dsn:
        return masked_url(dsn)
    return "<a key=value connection string>"  # libpq's other form: nothing of it is safe to show


def secrets_of(dsn: str) -> tuple[str, ...]:
    """Every text an error must not repeat: the string itself and its password."""
    found = [dsn]
    try:
        password = urlsplit(dsn).password if "://" in dsn else None
    except ValueError:
        password = None
    if password:
        found += [password, unquote(password)]
    for item in dsn.split():
        if item.startswith("password="):
            found.append(item.split("=", 1)[1].strip("'"))
    return tuple(secret for secret in found if len(secret) >= 3)


def scrubbed(text: str, dsn: str) -> str:
    for secret in sorted(secrets_of(dsn), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


class Connections:
    """A psycopg connection per thread (the legs search from two threads at once)."""

    def __init__(self, dsn: str, on_connect: Callable | None = None, timeout_s: float | None = None):
        self._dsn = dsn
        self.where = shown(dsn)
        self._local = threading.local()
        self._all: list = []
        self._lock = threading.Lock()
        self._on_connect = on_connect
        # libpq waits whole seconds, at least 2 (a value of 1 is raised to 2).
        self._connect_timeout = CONNECT_TIMEOUT_S if timeout_s is None else max(2, math.ceil(timeout_s))

    @property
    def conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self):
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                "a team store needs the PostgreSQL driver: pip install 'captain-memo[team]' (psycopg 3)"
            ) from None
        with self.errors():
            conn = psycopg.connect(self._dsn, autocommit=True, connect_timeout=self._connect_timeout)
            if self._on_connect is not None:
                self._on_connect(conn)
        with self._lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def errors(self):
        """psycopg's failures as a StoreError naming the store masked and without its password."""
        try:
            yield
        except Exception as exc:
            if type(exc).__module__.split(".")[0] != "psycopg":
                raise
            text = scrubbed(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, self._dsn)
            raise StoreError(f"team store {self.where}: {text}") from None

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                try:
                    conn.close()
                except Exception:
                    pass
            self._all.clear()
        self._local = threading.local()
