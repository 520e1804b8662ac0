"""Rows of team memories indexed from a repository's note and skill folders, rewritten in place
(the team store's side of store/sync.py: unchanged chunks keep their rows and vectors)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import numpy as np

from captain_memo.base.chunking import content_hash
from captain_memo.records import NewMemory
from captain_memo.store.rows import REWRITE_COLUMNS, place_row, place_setting, setting, text_row
from captain_memo.store.sync import Stored

if TYPE_CHECKING:
    from captain_memo.store.postgres.terms import Tokenizer


class TeamSourceRows:
    """Mixed into ``TeamStore``, which supplies ``fetch``, ``write``, ``tokenizer`` and ``insert_chunks``."""

    if TYPE_CHECKING:
        tokenizer: Tokenizer

        def fetch(self, sql: str, params: Sequence = ()) -> list[tuple]: ...

        def write(self) -> AbstractContextManager: ...

        def insert_chunks(self, conn, memory_id: int, project: str | None, rows: Iterable[tuple]) -> None: ...

    def stored_by_key(self, project: str | None, prefix: str) -> dict[str, Stored]:
        # kept_by: the author of a row this role may not change (row-level security would refuse it),
        # so an index run leaves that note to its author or a curator instead of failing.
        rows = self.fetch(
            "SELECT id, source_key, kind, content_hash, source_path, line_start, line_end, tags, created_at,"
            " CASE WHEN author = current_user OR project IN (SELECT g.project FROM grants g"
            " WHERE g.role = current_user AND g.curate)"
            " OR pg_has_role((SELECT relowner FROM pg_class WHERE oid = 'memories'::regclass), 'USAGE')"
            " THEN NULL ELSE author::text END"
            " FROM memories WHERE project = %s AND source_key IS NOT NULL AND left(source_key, %s) = %s",
            (project or "", len(prefix), prefix),
        )
        return {
            key: Stored(
                mid,
                key,
                kind,
                digest,
                path,
                start,
                end,
                tuple(t for t in tags.split(",") if t),
                created,
                kept_by=kept_by,
            )
            for mid, key, kind, digest, path, start, end, tags, created, kept_by in rows
        }

    def bodies(self, ids: Sequence[int]) -> dict[int, str]:
        return dict(self.fetch("SELECT id, body FROM memories WHERE id = ANY(%s)", (list(ids),))) if ids else {}

    def chunk_hashes(self, memory_id: int) -> set[str]:
        return {row[0] for row in self.fetch("SELECT content_hash FROM chunks WHERE memory_id = %s", (memory_id,))}

    def update_place(self, memory_id: int, memory: NewMemory) -> None:
        with self.write() as conn:
            conn.execute(f"UPDATE memories SET {place_setting('%s')} WHERE id = %s", (*place_row(memory), memory_id))

    def rewrite(
        self, memory_id: int, memory: NewMemory, chunks: Sequence[str], vectors: Mapping[str, np.ndarray] | None
    ) -> int:
        """Replace a memory's text; unchanged chunks keep their rows and vectors. Returns how many
        chunk rows were inserted."""
        new_texts = list(chunks)
        with self.write() as conn:
            conn.execute(
                f"UPDATE memories SET {setting(REWRITE_COLUMNS, '%s')} WHERE id = %s",
                (*text_row(memory, time.time(), REWRITE_COLUMNS), memory_id),
            )
            old: dict[str, list[int]] = {}
            for chunk_id, digest in conn.execute(
                "SELECT id, content_hash FROM chunks WHERE memory_id = %s ORDER BY seq", (memory_id,)
            ).fetchall():
                old.setdefault(digest, []).append(chunk_id)
            added = []
            for seq, text in enumerate(new_texts):
                digest = content_hash(text)
                if old.get(digest):
                    conn.execute("UPDATE chunks SET seq = %s WHERE id = %s", (seq, old[digest].pop(0)))
                    continue
                added.append((seq, text, None if vectors is None else vectors.get(digest)))
            stale = [cid for ids in old.values() for cid in ids]
            if stale:
                conn.execute("DELETE FROM chunks WHERE id = ANY(%s)", (stale,))
            tokens = self.tokenizer.tokens([text for _, text, _ in added])
            rows = [(seq, text, terms, vector) for (seq, text, vector), terms in zip(added, tokens)]
            self.insert_chunks(conn, memory_id, memory.project, rows)
        return len(added)

    def file_states(self, project: str | None) -> dict[str, tuple[str, int]]:
        rows = self.fetch("SELECT path, digest, sections FROM source_files WHERE project = %s", (project or "",))
        return {path: (digest, sections) for path, digest, sections in rows}

    def save_file_states(
        self, project: str | None, states: Mapping[str, tuple[str, int]], dropped: Sequence[str]
    ) -> None:
        if not states and not dropped:
            return
        with self.write() as conn:
            cursor = conn.cursor()
            if states:
                cursor.executemany(
                    "INSERT INTO source_files (project, path, digest, sections) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (project, path) DO UPDATE SET digest = excluded.digest, sections = excluded.sections",
                    [(project or "", path, digest, n) for path, (digest, n) in states.items()],
                )
            if dropped:
                cursor.executemany(
                    "DELETE FROM source_files WHERE project = %s AND path = %s", [(project or "", p) for p in dropped]
                )
