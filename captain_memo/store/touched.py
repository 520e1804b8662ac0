"""Touched paths: every path a commit touched, one row each, looked up by the stem it names.

The body of a commit's observation lists its first 20 files for people; a sweep touching 300 files
is found by the rows here, all of them (``captain_memo/base/touches.py`` says which token names a path).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from captain_memo.base.touches import is_source_path, lookup_stem, names_path, prefers_source, stem_of

TOUCHED_TABLE = """
CREATE TABLE IF NOT EXISTS touched_paths (
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    stem TEXT NOT NULL,
    PRIMARY KEY (memory_id, path)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS touched_paths_stem ON touched_paths(stem)
"""
# The files line git_history.py writes into a commit's body (the first 20, then "and N more").
FILES_LINE = re.compile(r"^Files: (.+?)(?: and [\d,]+ more)?$", re.MULTILINE)


def insert_touched(conn, memory_id: int, paths: Iterable[str]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO touched_paths (memory_id, path, stem) VALUES (?, ?, ?)",
        [(memory_id, path, stem_of(path)) for path in dict.fromkeys(paths) if path],
    )


def backfill_from_bodies(conn) -> None:
    """Commits stored before the table existed: the paths their body lists, and their source path."""
    rows = conn.execute(
        "SELECT id, body, source_path FROM memories WHERE origin = 'git' AND kind = 'observation'"
    ).fetchall()
    for memory_id, body, source_path in rows:
        found = FILES_LINE.findall(body or "")
        listed = [p.strip() for p in found[-1].split(", ")] if found else []
        insert_touched(conn, memory_id, [*listed, *([source_path] if source_path else [])])


def has_touched_paths(conn) -> bool:
    """A read-only store opened before migration 7 has no table: changes are then found by text."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'touched_paths'").fetchone()
    return row is not None


def _scope_sql(project: str | None, all_projects: bool, window: tuple[float, float] | None) -> tuple[str, list]:
    where, args = "m.kind = 'observation'", list[object]()
    if not all_projects:
        where += " AND (m.project IS NULL OR m.project = ?)"
        args.append(project)
    if window is not None:
        where += " AND m.created_at >= ? AND m.created_at < ?"
        args.extend(window)
    return where, args


def touching_paths(
    conn,
    token: str,
    project: str | None,
    all_projects: bool,
    k: int,
    window: tuple[float, float] | None = None,
) -> dict[int, tuple[float, str]]:
    """The ``k`` newest observations in scope with a path ``token`` names: memory id -> (date, path).

    A module's name ("config") means its source file: a doc or settings file of that name
    (config.rst, config.yml) counts only when no source file has it."""
    if not has_touched_paths(conn):
        return {}
    where, args = _scope_sql(project, all_projects, window)
    rows = conn.execute(
        "SELECT t.memory_id, m.created_at, t.path FROM touched_paths t JOIN memories m ON m.id = t.memory_id"
        f" WHERE t.stem = ? AND {where} ORDER BY m.created_at DESC, t.memory_id DESC",
        (lookup_stem(token), *args),
    )
    source: dict[int, tuple[float, str]] = {}
    other: dict[int, tuple[float, str]] = {}
    wants_source = prefers_source(token)
    while len(source) < k and (batch := rows.fetchmany(256)):
        for memory_id, created_at, path in batch:
            if not names_path(token, path):
                continue
            kept = source if not wants_source or is_source_path(path) else other
            if memory_id not in source and len(kept) < k:
                kept.setdefault(memory_id, (created_at, path))
    return source or other


def touching_folder(
    conn,
    name: str,
    project: str | None,
    all_projects: bool,
    k: int,
    window: tuple[float, float] | None = None,
) -> dict[int, tuple[float, str]]:
    """The ``k`` newest observations in scope touching a file under a folder named ``name``: a
    package's name ("assertion") covers every file under it (assertion/rewrite.py), not only its
    ``__init__.py``. Source files first, as for a module's name. A scan of the paths (no index
    serves a folder inside them), made only for a bare name in a change question."""
    if not has_touched_paths(conn) or not re.fullmatch(r"[\w-]+", name):
        return {}
    where, args = _scope_sql(project, all_projects, window)
    escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = conn.execute(
        "SELECT t.memory_id, m.created_at, t.path FROM touched_paths t JOIN memories m ON m.id = t.memory_id"
        " WHERE (t.path LIKE ? ESCAPE '\\' OR t.path LIKE ? ESCAPE '\\')"
        f" AND {where} ORDER BY m.created_at DESC, t.memory_id DESC",
        (f"{escaped}/%", f"%/{escaped}/%", *args),
    )
    source: dict[int, tuple[float, str]] = {}
    other: dict[int, tuple[float, str]] = {}
    for memory_id, created_at, path in rows:
        if len(source) >= k:
            break
        kept = source if is_source_path(path) else other
        if memory_id not in source and len(kept) < k:
            kept.setdefault(memory_id, (created_at, path))
    return source or other


def newest_observations(
    conn, project: str | None, all_projects: bool, k: int, window: tuple[float, float] | None = None
) -> dict[int, float]:
    """The ``k`` newest observations in scope (inside ``window``): memory id -> date."""
    where, args = _scope_sql(project, all_projects, window)
    rows = conn.execute(
        f"SELECT m.id, m.created_at FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
        (*args, k),
    )
    return dict(rows.fetchall())


def text_naming(
    conn, match: str, project: str | None, all_projects: bool, k: int, window: tuple[float, float] | None = None
) -> dict[int, float]:
    """The ``k`` newest observations in scope whose text matches the FTS5 expression: id -> date."""
    where, args = _scope_sql(project, all_projects, window)
    rows = conn.execute(
        "WITH hits AS (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)"
        " SELECT m.id, max(m.created_at) FROM hits JOIN chunks c ON c.id = hits.rowid"
        f" JOIN memories m ON m.id = c.memory_id WHERE {where} GROUP BY m.id"
        " ORDER BY max(m.created_at) DESC, m.id DESC LIMIT ?",
        (match, *args, k),
    )
    return dict(rows.fetchall())


def first_chunks(conn, memory_ids: Sequence[int]) -> dict[int, int]:
    """memory id -> its first chunk's id (the chunk that stands for it in the pool)."""
    if not memory_ids:
        return {}
    marks = ",".join("?" * len(memory_ids))
    rows = conn.execute(
        f"SELECT memory_id, min(id) FROM chunks WHERE memory_id IN ({marks}) GROUP BY memory_id", list(memory_ids)
    )
    return dict(rows.fetchall())


def newest_before(conn, project: str | None, all_projects: bool, before: float) -> float | None:
    """The date of the newest observation in scope older than ``before`` (None: there is none)."""
    where, args = _scope_sql(project, all_projects, None)
    row = conn.execute(
        f"SELECT max(m.created_at) FROM memories m WHERE {where} AND m.created_at < ?", (*args, before)
    ).fetchone()
    return row[0] if row else None


class _Connected(Protocol):
    """A store's database (store/db.py), named here without importing it: its migrations import this module."""

    @property
    def conn(self) -> Any: ...


class TouchedPaths:
    """The touched paths of one store, asked by name (sources/change_plan.py): each method is the function
    of the same name above, on the store's connection for the calling thread."""

    def __init__(self, database: _Connected):
        self._database = database

    def touching_paths(
        self, token: str, project: str | None, all_projects: bool, k: int, window: tuple[float, float] | None = None
    ) -> dict[int, tuple[float, str]]:
        return touching_paths(self._database.conn, token, project, all_projects, k, window)

    def touching_folder(
        self, name: str, project: str | None, all_projects: bool, k: int, window: tuple[float, float] | None = None
    ) -> dict[int, tuple[float, str]]:
        return touching_folder(self._database.conn, name, project, all_projects, k, window)

    def newest_observations(
        self, project: str | None, all_projects: bool, k: int, window: tuple[float, float] | None = None
    ) -> dict[int, float]:
        return newest_observations(self._database.conn, project, all_projects, k, window)

    def text_naming(
        self, match: str, project: str | None, all_projects: bool, k: int, window: tuple[float, float] | None = None
    ) -> dict[int, float]:
        return text_naming(self._database.conn, match, project, all_projects, k, window)

    def first_chunks(self, memory_ids: Sequence[int]) -> dict[int, int]:
        return first_chunks(self._database.conn, memory_ids)

    def newest_before(self, project: str | None, all_projects: bool, before: float) -> float | None:
        return newest_before(self._database.conn, project, all_projects, before)
