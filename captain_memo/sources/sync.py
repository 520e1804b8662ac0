"""Writing re-indexed text back without re-embedding what did not change.

``Store.replace_body`` rebuilds every chunk; re-indexing wants less: a chunk whose text is the same
as before keeps its row, its keyword row and its vector, and only new chunk texts are inserted
(with the vectors just computed for them). The memory keeps its id, its Tide fields and its
supersession links. Each call is one transaction, like every other write.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from captain_memo.chunking import content_hash
from captain_memo.records import NewMemory
from captain_memo.store import Store
from captain_memo.store.store import vector_blob


@dataclass(frozen=True)
class Stored:
    """What re-indexing needs to know about a memory already stored from a source."""

    id: int
    source_key: str
    kind: str
    content_hash: str
    source_path: str | None
    line_start: int | None
    line_end: int | None
    tags: tuple[str, ...]
    created_at: float

    def same_place(self, memory: NewMemory) -> bool:
        return (self.source_path, self.line_start, self.line_end, self.tags) == (
            memory.source.path, memory.source.line_start, memory.source.line_end, memory.tags)


def stored_by_key(store: Store, project: str | None, prefix: str) -> dict[str, Stored]:
    """Memories of ``project`` whose source key starts with ``prefix`` (one query)."""
    rows = store.conn.execute(
        "SELECT id, source_key, kind, content_hash, source_path, line_start, line_end, tags, created_at"
        " FROM memories WHERE ifnull(project, '') = ifnull(?, '') AND source_key IS NOT NULL"
        " AND substr(source_key, 1, ?) = ?", (project, len(prefix), prefix))
    return {row[1]: Stored(*row[:7], tuple(t for t in row[7].split(",") if t), row[8]) for row in rows}


def bodies(store: Store, ids: Sequence[int]) -> dict[int, str]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return dict(store.conn.execute(f"SELECT id, body FROM memories WHERE id IN ({marks})", list(ids)))


def chunk_hashes(store: Store, memory_id: int) -> set[str]:
    return {row[0] for row in store.conn.execute("SELECT content_hash FROM chunks WHERE memory_id = ?", (memory_id,))}


def update_place(store: Store, memory_id: int, memory: NewMemory) -> None:
    """Only where the text sits moved (line range, tags, date, key): no chunk is touched."""
    with store.write() as conn:
        conn.execute(
            "UPDATE memories SET source_key = ?, source_path = ?, line_start = ?, line_end = ?, tags = ?,"
            " created_at = coalesce(?, created_at) WHERE id = ?",
            (memory.source_key, memory.source.path, memory.source.line_start, memory.source.line_end,
             ",".join(memory.tags), memory.created_at, memory_id))


def rewrite(store: Store, memory_id: int, memory: NewMemory, chunks: Sequence[str],
            vectors: Mapping[str, np.ndarray] | None) -> int:
    """Replace a memory's text; unchanged chunks keep their rows and vectors.

    ``vectors`` maps a chunk text's hash to its new vector (None: the embedder is down, new chunks
    wait for a backfill). Returns how many chunk rows were inserted.
    """
    now = time.time()
    table = store.vec_table if store.vec_available and store.table_exists(store.vec_table) else None
    with store.write() as conn:
        conn.execute(
            "UPDATE memories SET kind = ?, title = ?, body = ?, updated_at = ?, branch = ?, source_key = ?, source_path = ?,"
            " line_start = ?, line_end = ?, source_commit = ?, origin = ?, filetype = ?, content_hash = ?,"
            " tags = ?, created_at = coalesce(?, created_at) WHERE id = ?",
            (memory.kind, memory.title, memory.body, now, memory.branch, memory.source_key, memory.source.path,
             memory.source.line_start, memory.source.line_end, memory.source.commit, memory.source.origin,
             memory.source.filetype, content_hash(memory.kind, memory.title, memory.body), ",".join(memory.tags),
             memory.created_at, memory_id))
        old: dict[str, list[int]] = {}
        for chunk_id, digest in conn.execute("SELECT id, content_hash FROM chunks WHERE memory_id = ? ORDER BY seq",
                                             (memory_id,)):
            old.setdefault(digest, []).append(chunk_id)
        inserted = 0
        for seq, text in enumerate(chunks):
            digest = content_hash(text)
            if old.get(digest):
                conn.execute("UPDATE chunks SET seq = ? WHERE id = ?", (seq, old[digest].pop(0)))
                continue
            vector = None if vectors is None or table is None else vectors.get(digest)
            chunk_id = conn.execute(
                "INSERT INTO chunks (memory_id, seq, text, content_hash, has_vector) VALUES (?, ?, ?, ?, ?)",
                (memory_id, seq, text, digest, int(vector is not None))).lastrowid
            conn.execute("INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", (chunk_id, text))
            if vector is not None:
                conn.execute(f"INSERT INTO {table} (rowid, scope, embedding) VALUES (?, ?, ?)",
                             (chunk_id, memory.project or "", vector_blob(vector)))
            inserted += 1
        for chunk_id in (cid for ids in old.values() for cid in ids):
            conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (chunk_id,))
            if table is not None:
                conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (chunk_id,))
            conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))
    return inserted


# -- per-file state: an unchanged file is not parsed again ---------------------------------------
# The table belongs to the sources alone and is created on first write (CREATE ... IF NOT EXISTS in
# the same transaction as the write), so a store that never indexed a folder does not have it.
FILE_TABLE = ("CREATE TABLE IF NOT EXISTS source_files (project TEXT NOT NULL, path TEXT NOT NULL,"
              " digest TEXT NOT NULL, sections INTEGER NOT NULL, PRIMARY KEY (project, path))")


def file_states(store: Store, project: str | None) -> dict[str, tuple[str, int]]:
    """Stored path -> (digest of the text as last indexed, how many sections it gave)."""
    if not store.table_exists("source_files"):
        return {}
    rows = store.conn.execute("SELECT path, digest, sections FROM source_files WHERE project = ?", (project or "",))
    return {path: (digest, sections) for path, digest, sections in rows}


def save_file_states(store: Store, project: str | None, states: Mapping[str, tuple[str, int]],
                     dropped: Sequence[str]) -> None:
    if not states and not dropped:
        return
    with store.write() as conn:
        conn.execute(FILE_TABLE)
        conn.executemany("INSERT INTO source_files (project, path, digest, sections) VALUES (?, ?, ?, ?)"
                         " ON CONFLICT (project, path) DO UPDATE SET digest = excluded.digest,"
                         " sections = excluded.sections",
                         [(project or "", path, digest, n) for path, (digest, n) in states.items()])
        conn.executemany("DELETE FROM source_files WHERE project = ? AND path = ?",
                         [(project or "", path) for path in dropped])
