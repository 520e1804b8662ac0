"""Connections to the team store: one per thread, opened on first use; errors without secrets.

A connection string holds a password more often than not: it is shown masked (``masked_url``)
and every error met on the way out has the string and its password removed from its text.

Every statement runs under the current operation's time limit (``limit_s``: the server's
``statement_timeout`` and ``lock_timeout``), so a statement that cannot finish in time is cancelled
by the server itself, never left to commit after its caller gave up. A connection the server
dropped while it sat idle (a restart) is noticed before it is used and opened again.
"""

from __future__ import annotations

import math
import select
import threading
from collections.abc import Callable
from contextlib import contextmanager
from urllib.parse import unquote, urlsplit

from captain_memo.base.urls import keyword_pairs, masked_url
from captain_memo.errors import StoreError

# Seconds to wait for the server when connecting; a down team store must not hang a command.
CONNECT_TIMEOUT_S = 5


SECRET_KEYWORDS = ("password", "sslpassword")


def shown(dsn: str) -> str:
    """The connection string as it may be printed: no user, password or parameter values."""
    return masked_url(dsn)


def secrets_of(dsn: str) -> tuple[str, ...]:
    """Every text an error must not repeat: the string itself and its password."""
    found = [dsn]
    try:
        password = urlsplit(dsn).password if "://" in dsn else None
    except ValueError:
        password = None
    if password:
        found += [password, unquote(password)]
    found += [value for key, value in keyword_pairs(dsn) or () if key in SECRET_KEYWORDS]
    return tuple(secret for secret in found if len(secret) >= 3)


class ConnectionLost(StoreError):
    """The connection broke (a restart, a network failure) or could not be made."""


class TimedOut(StoreError):
    """The server cancelled a statement at its time limit (statement_timeout or lock_timeout): it
    was rolled back, nothing of it is stored."""


class Refused(StoreError):
    """The database refused the statement to this role (a privilege or a row-level security policy)."""


def _refused_or_not(exc: Exception) -> type[StoreError]:
    return Refused if getattr(exc, "sqlstate", None) == "42501" else StoreError  # insufficient_privilege


def _timed_out(exc: Exception) -> bool:
    return getattr(exc, "sqlstate", None) in ("57014", "55P03")  # query_canceled, lock_not_available


# Administrator shutdown, crash shutdown, cannot connect now (starting or stopping): SQLSTATE 57P0x.
LOST_STATES = ("57P01", "57P02", "57P03")


# What a server says while it cannot take connections for a moment (a restart, a failover).
PASSING = ("starting up", "shutting down", "not yet accepting connections", "in recovery mode")


def _lost(exc: Exception) -> bool:
    """A broken connection, or one refused for now: worth another try. A server that answered
    "no" for good (no such database, a wrong password) is not."""
    import psycopg

    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = getattr(exc, "sqlstate", None) or ""
    if state:
        return state.startswith("08") or state in LOST_STATES
    text = str(exc)
    return "FATAL:" not in text or any(phrase in text for phrase in PASSING)


def scrubbed(text: str, dsn: str) -> str:
    for secret in sorted(secrets_of(dsn), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


IDLE = 0  # psycopg.pq.TransactionStatus.IDLE, without importing psycopg here


def _dropped(conn) -> bool:
    """True when the server has spoken on an idle connection: after a restart or an administrator's
    termination it sends its goodbye and closes, and the next statement would fail on it."""
    if conn.info.transaction_status != IDLE:
        return False
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


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
        self.limit_s = timeout_s  # the time limit of every statement from now on; None: unbounded

    @property
    def conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None and (conn.closed or _dropped(conn)):
            self._discard(conn)
            conn = None
        if conn is None:
            conn = self._connect()
            self._local.conn, self._local.limit = conn, None
        if self._local.limit != self.limit_s and conn.info.transaction_status == IDLE:
            millis = "0" if self.limit_s is None else str(max(1, int(self.limit_s * 1000)))
            with self.errors():
                conn.execute(
                    "SELECT set_config('statement_timeout', %s, false), set_config('lock_timeout', %s, false)",
                    (millis, millis),
                )
            self._local.limit = self.limit_s
        return conn

    def _discard(self, conn) -> None:
        with self._lock:
            if conn in self._all:
                self._all.remove(conn)
        try:
            conn.close()
        except Exception:
            pass

    def cancel(self) -> None:
        """Cancel what every connection is running now (a caller gave up waiting for it)."""
        with self._lock:
            running = list(self._all)
        for conn in running:
            try:
                if not conn.closed and conn.info.transaction_status != IDLE:
                    conn.cancel_safe(timeout=2)
            except Exception:
                pass

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
        """psycopg's failures as a StoreError naming the store masked and without its password;
        ConnectionLost when the connection broke or could not be made (worth trying again)."""
        try:
            yield
        except Exception as exc:
            if type(exc).__module__.split(".")[0] != "psycopg":
                raise
            text = scrubbed(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, self._dsn)
            error = ConnectionLost if _lost(exc) else TimedOut if _timed_out(exc) else _refused_or_not(exc)
            raise error(f"team store {self.where}: {text}") from None

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                try:
                    conn.close()
                except Exception:
                    pass
            self._all.clear()
        self._local = threading.local()
