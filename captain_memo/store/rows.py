"""A memory's column values as each write stores them, shared by the local store and the team
store (store/postgres), which differ only in their placeholders ('?' against '%s')."""

from __future__ import annotations

import operator

from captain_memo.base.chunking import content_hash
from captain_memo.records import NewMemory

ROW_IDS = range(-(2**63), 2**63)  # SQLite's INTEGER and PostgreSQL's bigint alike


def row_id(memory_id) -> int | None:
    """``memory_id`` as the integer either store binds, None for one it cannot hold (no memory has
    it); TypeError for an id that is not an integer. Checked first because ``"1" in ROW_IDS``
    compares "1" with each of its 2**64 integers in turn: ids from people and clients are parsed
    before they reach a store (Memo.ref)."""
    if isinstance(memory_id, bool) or not hasattr(type(memory_id), "__index__"):
        raise TypeError(f"a memory id is an integer, not {type(memory_id).__name__} (parse it first: Memo.ref)")
    value = operator.index(memory_id)  # numpy's integers too
    return value if value in ROW_IDS else None


# A new memory's columns, in the order of ``new_row``.
NEW_COLUMNS = (
    "kind, title, body, created_at, updated_at, project, branch, source_path, line_start, line_end, "
    "source_commit, origin, filetype, content_hash, stability, source_key, tags"
)
# What rewriting a memory's text sets, in the order of ``text_row`` (``created_at`` last, kept when None).
BODY_COLUMNS = ("title", "body", "updated_at", "branch", "source_path", "line_start", "line_end", "source_commit")
REWRITE_COLUMNS: tuple[str, ...] = ("kind", "title", "body", "updated_at", "branch", "source_key", "source_path")
REWRITE_COLUMNS += ("line_start", "line_end", "source_commit", "origin", "filetype")
PLACE_COLUMNS = ("source_key", "source_path", "line_start", "line_end", "tags")


def new_row(memory: NewMemory, now: float, stability: float, project: str | None) -> tuple:
    """The values of ``NEW_COLUMNS`` for a memory stored ``now`` (``project`` as the store keeps it)."""
    return (
        memory.kind,
        memory.title,
        memory.body,
        memory.created_at or now,
        now,
        project,
        memory.branch,
        memory.source.path,
        memory.source.line_start,
        memory.source.line_end,
        memory.source.commit,
        memory.source.origin,
        memory.source.filetype,
        content_hash(memory.kind, memory.title, memory.body),
        stability,
        memory.source_key,
        ",".join(memory.tags),
    )


def setting(columns: tuple[str, ...], mark: str) -> str:
    """``a = ?, b = ?, ...`` then content_hash, tags and created_at (kept when none is given)."""
    parts = [f"{column} = {mark}" for column in (*columns, "content_hash", "tags")]
    return ", ".join(parts) + f", created_at = coalesce({mark}, created_at)"


def text_row(memory: NewMemory, now: float, columns: tuple[str, ...]) -> tuple:
    """The values of ``setting(columns)`` for a memory's new text, rewritten ``now``."""
    values = {
        "kind": memory.kind,
        "title": memory.title,
        "body": memory.body,
        "updated_at": now,
        "branch": memory.branch,
        "source_key": memory.source_key,
        "source_path": memory.source.path,
        "line_start": memory.source.line_start,
        "line_end": memory.source.line_end,
        "source_commit": memory.source.commit,
        "origin": memory.source.origin,
        "filetype": memory.source.filetype,
    }
    digest = content_hash(memory.kind, memory.title, memory.body)
    return (*(values[c] for c in columns), digest, ",".join(memory.tags), memory.created_at)


def place_setting(mark: str) -> str:
    return ", ".join(f"{column} = {mark}" for column in PLACE_COLUMNS) + f", created_at = coalesce({mark}, created_at)"


def place_row(memory: NewMemory) -> tuple:
    """The values of ``PLACE_COLUMNS`` and created_at (kept when None): where the text sits."""
    source = memory.source
    return (
        memory.source_key,
        source.path,
        source.line_start,
        source.line_end,
        ",".join(memory.tags),
        memory.created_at,
    )
