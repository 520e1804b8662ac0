"""The team store asked directly in SQL, past the client: what its owner administers and what a
member's role can see. The load test (bench/teamload.py) uses it to check the guarantees the
database gives (row-level security), not only what our client chooses to show."""

from __future__ import annotations

from typing import TYPE_CHECKING

from captain_memo.store.postgres.schema import MEMBER_ROLE

if TYPE_CHECKING:
    from captain_memo.store.postgres.store import TeamStore


def add_member(conn, role: str) -> None:
    """A login role in the members' group (doc/team.md); kept if it exists. Run as the owner."""
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
        conn.execute(f'CREATE ROLE "{role}" LOGIN IN ROLE {MEMBER_ROLE}')


def grant(conn, role: str, project: str, curate: bool = False) -> None:
    """Let ``role`` read ``project`` (and change others' memories in it with ``curate``). Run as the owner."""
    conn.execute(
        "INSERT INTO grants (role, project, curate) VALUES (%s, %s, %s)"
        " ON CONFLICT (role, project) DO UPDATE SET curate = excluded.curate",
        (role, project, curate),
    )


def titled(conn, prefix: str) -> list[tuple[str, int, str]]:
    """(title, id, project) of every memory whose title starts with ``prefix``; the owner sees all."""
    return conn.execute("SELECT title, id, project FROM memories WHERE starts_with(title, %s)", (prefix,)).fetchall()


def rows_seen(conn, project: str) -> int:
    """Memory and chunk rows of ``project`` that this connection's role can read."""
    memories = conn.execute("SELECT count(*) FROM memories WHERE project = %s", (project,)).fetchone()[0]
    chunks = conn.execute("SELECT count(*) FROM chunks WHERE project = %s", (project,)).fetchone()[0]
    return memories + chunks


def insert_into(conn, project: str) -> str:
    """Try to write a memory into ``project`` as this role: 'accepted' or 'refused: <reason>'."""
    from psycopg import errors

    try:
        conn.execute(
            "INSERT INTO memories (kind, title, body, created_at, updated_at, project, content_hash)"
            " VALUES ('memory', 'intruder', 'x', 0, 0, %s, 'x')",
            (project,),
        )
    except errors.InsufficientPrivilege as exc:
        return f"refused: {exc.diag.message_primary}"
    return "accepted"


class Audit:
    """The functions above on a team store's own connection, for callers outside store/ (which
    hold a store, never a connection)."""

    def __init__(self, store: TeamStore):
        self._store = store

    def add_member(self, role: str) -> None:
        add_member(self._store.conn, role)

    def grant(self, role: str, project: str, curate: bool = False) -> None:
        grant(self._store.conn, role, project, curate)

    def rows_seen(self, project: str) -> int:
        return rows_seen(self._store.conn, project)

    def insert_into(self, project: str) -> str:
        return insert_into(self._store.conn, project)


def titled_as_owner(owner_dsn: str, prefix: str) -> list[tuple[str, int, str]]:
    """``titled`` on a connection of its own as the store's owner, whom row-level security does
    not hide rows from."""
    import psycopg

    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        return titled(conn, prefix)
