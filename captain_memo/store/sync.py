"""Writing re-indexed text back without re-embedding what did not change.

``Store.replace_body`` rebuilds every chunk; re-indexing wants less: a chunk whose text is the same
as before keeps its row, its keyword row and its vector, and only new chunk texts are inserted
(with the vectors just computed for them). The memory keeps its id, its Tide fields and its
supersession links. Each call is one transaction, like every other write.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from captain_memo.base.chunking import content_hash
from captain_memo.records import NewMemory
from captain_memo.store.db import Database
from captain_memo.store.rows import REWRITE_COLUMNS, place_row, place_setting, setting, text_row


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
    rule_scope: str | None = None  # records.RuleScope's stored text (the local store keeps it)
    # Who wrote it, when this role may not change it (a team store's member reading another's note).
    kept_by: str | None = None

    def same_place(self, memory: NewMemory) -> bool:
        return (self.source_path, self.line_start, self.line_end, self.tags, self.rule_scope) == (
            memory.source.path,
            memory.source.line_start,
            memory.source.line_end,
            memory.tags,
            _stored_scope(memory),
        )


def _stored_scope(memory: NewMemory) -> str | None:
    scope = memory.source.rule_scope
    return scope.stored() if scope else None


class SourceRows(Database):
    """Rows of memories indexed from sources (note files, git history), read and rewritten in place."""

    def stored_by_key(self, project: str | None, prefix: str) -> dict[str, Stored]:
        """Memories of ``project`` whose source key starts with ``prefix`` (one query)."""
        rows = self.conn.execute(
            "SELECT id, source_key, kind, content_hash, source_path, line_start, line_end, tags, created_at,"
            " rule_scope FROM memories WHERE ifnull(project, '') = ifnull(?, '') AND source_key IS NOT NULL"
            " AND substr(source_key, 1, ?) = ?",
            (project, len(prefix), prefix),
        )
        return {
            key: Stored(
                mid, key, kind, digest, path, start, end, tuple(t for t in tags.split(",") if t), created, scope
            )
            for mid, key, kind, digest, path, start, end, tags, created, scope in rows
        }

    def bodies(self, ids: Sequence[int]) -> dict[int, str]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return dict(self.conn.execute(f"SELECT id, body FROM memories WHERE id IN ({marks})", list(ids)))

    def chunk_hashes(self, memory_id: int) -> set[str]:
        return {
            row[0] for row in self.conn.execute("SELECT content_hash FROM chunks WHERE memory_id = ?", (memory_id,))
        }

    def update_place(self, memory_id: int, memory: NewMemory) -> None:
        """Only where the text sits moved (line range, tags, date, key): no chunk is touched."""
        with self.write() as conn:
            conn.execute(f"UPDATE memories SET {place_setting('?')} WHERE id = ?", (*place_row(memory), memory_id))
            conn.execute("UPDATE memories SET rule_scope = ? WHERE id = ?", (_stored_scope(memory), memory_id))

    def rewrite(
        self, memory_id: int, memory: NewMemory, chunks: Sequence[str], vectors: Mapping[str, np.ndarray] | None
    ) -> int:
        """Replace a memory's text; unchanged chunks keep their rows and vectors.

        ``vectors`` maps a chunk text's hash to its new vector (None: the embedder is down, new chunks
        wait for a backfill). Returns how many chunk rows were inserted.
        """
        now = time.time()
        table = self.vec_table if self.vec_available and self.table_exists(self.vec_table) else None
        with self.write() as conn:
            conn.execute(
                f"UPDATE memories SET {setting(REWRITE_COLUMNS, '?')} WHERE id = ?",
                (*text_row(memory, now, REWRITE_COLUMNS), memory_id),
            )
            conn.execute("UPDATE memories SET rule_scope = ? WHERE id = ?", (_stored_scope(memory), memory_id))
            old: dict[str, list[int]] = {}
            for chunk_id, digest in conn.execute(
                "SELECT id, content_hash FROM chunks WHERE memory_id = ? ORDER BY seq", (memory_id,)
            ):
                old.setdefault(digest, []).append(chunk_id)
            inserted = 0
            for seq, text in enumerate(chunks):
                digest = content_hash(text)
                if old.get(digest):
                    conn.execute("UPDATE chunks SET seq = ? WHERE id = ?", (seq, old[digest].pop(0)))
                    continue
                vector = None if vectors is None or table is None else vectors.get(digest)
                self.insert_chunk(conn, memory_id, seq, text, memory.project, vector)
                inserted += 1
            for chunk_id in (cid for ids in old.values() for cid in ids):
                self.delete_chunk(conn, chunk_id)
        return inserted

    # -- per-file state: an unchanged file is not parsed again ---------------------------------------

    def file_states(self, project: str | None) -> dict[str, tuple[str, int]]:
        """Stored path -> (digest of the text as last indexed, how many sections it gave)."""
        rows = self.conn.execute("SELECT path, digest, sections FROM source_files WHERE project = ?", (project or "",))
        return {path: (digest, sections) for path, digest, sections in rows}

    def save_file_states(
        self, project: str | None, states: Mapping[str, tuple[str, int]], dropped: Sequence[str]
    ) -> None:
        if not states and not dropped:
            return
        with self.write() as conn:
            conn.executemany(
                "INSERT INTO source_files (project, path, digest, sections) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (project, path) DO UPDATE SET digest = excluded.digest,"
                " sections = excluded.sections",
                [(project or "", path, digest, n) for path, (digest, n) in states.items()],
            )
            conn.executemany(
                "DELETE FROM source_files WHERE project = ? AND path = ?", [(project or "", path) for path in dropped]
            )
