"""A throwaway team database on a server, for measurements (``captain-memo eval --team-db``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count
from urllib.parse import urlsplit, urlunsplit

from captain_memo.errors import ConfigError
from captain_memo.store.postgres.connection import Connections

_serial = count()


@contextmanager
def scratch_database(dsn: str) -> Iterator[str]:
    """A new database on ``dsn``'s server (its role needs CREATEDB), dropped afterwards; yields
    the connection string of the new database."""
    if "://" not in dsn:
        raise ConfigError("--team-db takes a postgresql:// URL")
    name = f"captain_memo_scratch_{os.getpid()}_{next(_serial)}"
    server = Connections(dsn)
    with server.errors():
        server.conn.execute(f"CREATE DATABASE {name}")
    try:
        parts = urlsplit(dsn)
        yield urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
    finally:
        with server.errors():
            server.conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        server.close()
