"""The store: memories, their chunks, FTS rows and vectors, kept consistent in one transaction."""

from __future__ import annotations

import operator
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from captain_memo.base.chunking import content_hash
from captain_memo.config import RankConfig
from captain_memo.errors import DuplicateKeyError, NotFoundError, StoreError
from captain_memo.records import Chunk, Memory, NewMemory, RuleScope, Source, Superseded
from captain_memo.store.db import sqlite_module, vector_blob
from captain_memo.store.keyword import KeywordSearch
from captain_memo.store.rows import BODY_COLUMNS, NEW_COLUMNS, new_row, row_id, setting, text_row
from captain_memo.store.sync import SourceRows
from captain_memo.store.touched import TouchedPaths, insert_touched

if TYPE_CHECKING:
    from captain_memo.store.protocol import MemoryStore, VectorIndex

# What SQLite can bind: a larger id raised OverflowError; no memory can have it.
MEMORY_COLUMNS = (
    "id, kind, title, body, created_at, updated_at, project, branch, source_path, line_start, line_end, "
    "source_commit, origin, filetype, content_hash, superseded_by, stability, last_surfaced, opened_in_full, "
    "source_key, tags, last_opened, superseded_by_team, rule_scope"
)


def memory_from_row(row) -> Memory:
    (
        mid,
        kind,
        title,
        body,
        created,
        updated,
        project,
        branch,
        path,
        start,
        end,
        commit,
        origin,
        filetype,
        digest,
        superseded_by,
        stability,
        surfaced,
        opened,
        source_key,
        tags,
        last_opened,
        superseded_by_team,
    ) = row[:23]
    # The team store's rows end at the 23rd column: a rule's scope is kept in the local store only.
    scope = RuleScope.from_stored(row[23]) if len(row) > 23 else None
    return Memory(
        id=mid,
        kind=kind,
        title=title,
        body=body,
        created_at=created,
        updated_at=updated,
        project=project,
        branch=branch,
        source=Source(path, start, end, commit, origin, filetype, scope),
        content_hash=digest,
        superseded_by=superseded_by,
        stability=stability,
        last_surfaced=surfaced,
        opened_in_full=bool(opened),
        source_key=source_key,
        tags=tuple(t for t in tags.split(",") if t),
        last_opened=last_opened,
        superseded_by_team=superseded_by_team,
    )


class Store(SourceRows, KeywordSearch):
    """All reads and writes of memories; every write is one transaction."""

    def __init__(self, path: Path | str, initial_stability: float = RankConfig.tide_initial_stability):
        super().__init__(path)
        # Tide's stability for a new memory; the engine sets it from the ranking settings in force.
        self.initial_stability = initial_stability

    # -- writing -------------------------------------------------------------------------

    def add(
        self, memory: NewMemory, chunks: Sequence[str], vectors: np.ndarray | None, now: float | None = None
    ) -> int:
        """Insert a memory with its chunks, FTS rows and (when given) vectors; returns its id."""
        return self.add_many([(memory, chunks, vectors)], now)[0]

    def add_many(
        self, items: Sequence[tuple[NewMemory, Sequence[str], np.ndarray | None]], now: float | None = None
    ) -> list[int]:
        """Insert several memories in one transaction; returns their ids.

        For bulk sources (a batch of commits): one commit per memory cost ~4.5 ms each, a quarter
        of `index --git`'s own time besides embedding on a loaded 2-core machine.
        """
        now = time.time() if now is None else now
        try:
            with self.write() as conn:
                return [self._insert(conn, memory, chunks, vectors, now) for memory, chunks, vectors in items]
        except sqlite_module().IntegrityError as exc:
            raise _refused_row(exc, self.path) from None

    def _insert(self, conn, memory: NewMemory, chunks: Sequence[str], vectors: np.ndarray | None, now: float) -> int:
        marks = ", ".join("?" * len(NEW_COLUMNS.split(",")))
        scope = memory.source.rule_scope
        cur = conn.execute(
            f"INSERT INTO memories ({NEW_COLUMNS}, rule_scope) VALUES ({marks}, ?)",
            (*new_row(memory, now, self.initial_stability, memory.project), scope.stored() if scope else None),
        )
        memory_id = cur.lastrowid
        self._insert_chunks(conn, memory_id, memory.project, chunks, vectors)
        if memory.touched:
            insert_touched(conn, memory_id, memory.touched)
        return memory_id

    def replace_body(
        self, memory_id: int, memory: NewMemory, chunks: Sequence[str], vectors: np.ndarray | None
    ) -> None:
        """Update a memory's text in place (its id and Tide fields stay); every chunk is rebuilt.

        Re-indexing that keeps unchanged chunks and their vectors is ``rewrite`` (store/sync.py).
        """
        now = time.time()
        with self.write() as conn:
            conn.execute(
                f"UPDATE memories SET {setting(BODY_COLUMNS, '?')} WHERE id = ?",
                (*text_row(memory, now, BODY_COLUMNS), memory_id),
            )
            self._delete_chunks(conn, memory_id)
            self._insert_chunks(conn, memory_id, memory.project, chunks, vectors)

    def _insert_chunks(
        self, conn, memory_id: int, project: str | None, chunks: Sequence[str], vectors: np.ndarray | None
    ) -> None:
        for seq, text in enumerate(chunks):
            self.insert_chunk(conn, memory_id, seq, text, project, None if vectors is None else vectors[seq])

    def _delete_chunks(self, conn, memory_id: int) -> None:
        for (chunk_id,) in conn.execute("SELECT id FROM chunks WHERE memory_id = ?", (memory_id,)).fetchall():
            self.delete_chunk(conn, chunk_id)

    def delete(self, memory_id: int) -> None:
        with self.write() as conn:
            if not self._exists(conn, memory_id):
                raise NotFoundError(f"no memory with id {memory_id}")
            memory_id = operator.index(memory_id)  # what SQLite binds (numpy's integers are not)
            self._delete_chunks(conn, memory_id)
            conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))

    def set_vectors(self, chunk_ids: Sequence[int], vectors: np.ndarray, table: str | None = None) -> None:
        """Store vectors for chunks saved without one (endpoint down) or being re-embedded."""
        table = table or self.vec_table
        with self.write() as conn:
            for chunk_id, vector in zip(chunk_ids, vectors):
                row = conn.execute(
                    "SELECT m.project FROM chunks c JOIN memories m ON m.id = c.memory_id WHERE c.id = ?", (chunk_id,)
                ).fetchone()
                if row is None:
                    continue  # deleted meanwhile
                conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (chunk_id,))
                conn.execute(
                    f"INSERT INTO {table} (rowid, scope, embedding) VALUES (?, ?, ?)",
                    (chunk_id, row[0] or "", vector_blob(vector)),
                )
                if table == self.vec_table:
                    conn.execute("UPDATE chunks SET has_vector = 1 WHERE id = ?", (chunk_id,))

    def bulk_load(self, memories: Sequence[tuple[NewMemory, Sequence[str], np.ndarray]]) -> None:
        """Many memories with their chunks and vectors in one transaction of batched inserts, for
        generated benchmark stores; every chunk gets a vector, no duplicate check."""
        table = self.vec_table
        with self.write() as conn:
            first_memory = conn.execute("SELECT ifnull(max(id), 0) FROM memories").fetchone()[0] + 1
            first_chunk = conn.execute("SELECT ifnull(max(id), 0) FROM chunks").fetchone()[0] + 1
            rows: list[tuple] = []
            chunk_rows: list[tuple] = []
            fts: list[tuple] = []
            vecs: list[tuple] = []
            for i, (memory, texts, vectors) in enumerate(memories):
                mid = first_memory + i
                rows.append(
                    (
                        mid,
                        memory.kind,
                        memory.title,
                        memory.body,
                        memory.created_at,
                        memory.created_at,
                        memory.project,
                        memory.branch,
                        content_hash(memory.kind, memory.title, memory.body),
                        self.initial_stability,
                        memory.source.origin,
                    )
                )
                for seq, text in enumerate(texts):
                    cid = first_chunk + len(chunk_rows)
                    chunk_rows.append((cid, mid, seq, text, content_hash(text)))
                    fts.append((cid, text))
                    vecs.append((cid, memory.project or "", vector_blob(vectors[seq])))
            conn.executemany(
                "INSERT INTO memories (id, kind, title, body, created_at, updated_at, project, branch,"
                " content_hash, stability, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            conn.executemany(
                "INSERT INTO chunks (id, memory_id, seq, text, content_hash, has_vector) VALUES (?, ?, ?, ?, ?, 1)",
                chunk_rows,
            )
            conn.executemany("INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", fts)
            conn.executemany(f"INSERT INTO {table} (rowid, scope, embedding) VALUES (?, ?, ?)", vecs)

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the file (smaller and faster to open afterwards)."""
        with self.watch.changing():  # the file changed by this process's hand, not rewritten under it
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def pending_chunks(self, limit: int = 256) -> list[tuple[int, str]]:
        """Chunks stored without a vector, oldest first."""
        return list(self.conn.execute("SELECT id, text FROM chunks WHERE has_vector = 0 ORDER BY id LIMIT ?", (limit,)))

    def set_superseded(self, old_id: int, new_id: int | None, automatic: bool = False) -> int | None:
        """Mark ``old_id`` superseded by ``new_id`` (None clears it); returns what superseded it before."""
        with self.write() as conn:
            for mid in (old_id, new_id):
                if mid is not None and not self._exists(conn, mid):
                    raise NotFoundError(f"no memory with id {mid}")
            old_id = operator.index(old_id)  # what SQLite binds (numpy's integers are not)
            new_id = None if new_id is None else operator.index(new_id)
            previous = conn.execute("SELECT superseded_by FROM memories WHERE id = ?", (old_id,)).fetchone()[0]
            # One memory replaces it: a team memory that did before no longer does.
            conn.execute(
                "UPDATE memories SET superseded_by = ?, supersede_auto = ?,"
                " superseded_by_team = CASE WHEN ? IS NULL THEN superseded_by_team END WHERE id = ?",
                (new_id, int(automatic and new_id is not None), new_id, old_id),
            )
        return previous

    def set_superseded_by_team(self, old_id: int, team_id: int | None) -> int | None:
        """Mark ``old_id`` superseded by the team store's memory ``team_id`` (None clears it; the
        caller checked it exists there); returns the team memory that superseded it before."""
        with self.write() as conn:
            if not self._exists(conn, old_id):
                raise NotFoundError(f"no memory with id {old_id}")
            previous = conn.execute("SELECT superseded_by_team FROM memories WHERE id = ?", (old_id,)).fetchone()[0]
            conn.execute(
                "UPDATE memories SET superseded_by_team = ?,"
                " superseded_by = CASE WHEN ? IS NULL THEN superseded_by END, supersede_auto = 0 WHERE id = ?",
                (team_id, team_id, old_id),
            )
        return previous

    def superseded_by_ids(self, memory_id: int) -> list[int]:
        """The memories ``memory_id`` superseded."""
        return [
            row[0]
            for row in self.conn.execute("SELECT id FROM memories WHERE superseded_by = ? ORDER BY id", (memory_id,))
        ]

    def record_project(self, path: str, portable_id: str) -> None:
        """Remember the portable identity of the project at ``path`` (base/project_identity.py)."""
        with self.write() as conn:
            conn.execute(
                "INSERT INTO projects VALUES (?, ?) ON CONFLICT (path) DO UPDATE SET portable_id = excluded.portable_id",
                (path, portable_id),
            )

    def project_identities(self) -> dict[str, str]:
        """Local project path -> portable identity, for the projects whose identity is known."""
        return dict(self.conn.execute("SELECT path, portable_id FROM projects"))

    def record_surfacing(
        self, updates: Iterable[tuple[int, float]], now: float, opened: bool = False, patient: bool = True
    ) -> None:
        """Tide: new stability per memory id, last surfaced now; ``opened`` marks full opens.
        Not ``patient``: StoreError at once when another process holds the write lock."""
        with self.write(patient) as conn:
            for memory_id, stability in updates:
                conn.execute(
                    "UPDATE memories SET stability = ?, last_surfaced = ?, opened_in_full = opened_in_full | ?,"
                    " last_opened = CASE WHEN ? THEN ? ELSE last_opened END WHERE id = ?",
                    (stability, now, int(opened), int(opened), now, memory_id),
                )

    # -- reading -------------------------------------------------------------------------

    @staticmethod
    def _exists(conn, memory_id: int) -> bool:
        found = row_id(memory_id)
        return (
            found is not None and conn.execute("SELECT 1 FROM memories WHERE id = ?", (found,)).fetchone() is not None
        )

    def get(self, memory_id: int) -> Memory:
        row = None
        if (found := row_id(memory_id)) is not None:
            row = self.conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (found,)).fetchone()
        if row is None:
            raise NotFoundError(f"no memory with id {memory_id}")
        return memory_from_row(row)

    def find_by_hash(self, digest: str, project: str | None) -> int | None:
        row = self.conn.execute(
            "SELECT id FROM memories WHERE content_hash = ? AND project IS ?", (digest, project)
        ).fetchone()
        return row[0] if row else None

    def find_by_source_key(self, source_key: str, project: str | None) -> Memory | None:
        row = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE source_key = ? AND ifnull(project, '') = ifnull(?, '')",
            (source_key, project),
        ).fetchone()
        return memory_from_row(row) if row else None

    def missing_vectors(self, memory_id: int) -> int:
        """How many of a memory's chunks have no vector yet (saved while the embedder was down)."""
        return self.conn.execute(
            "SELECT count(*) FROM chunks WHERE memory_id = ? AND has_vector = 0", (memory_id,)
        ).fetchone()[0]

    def chunks_of(self, memory_id: int) -> list[Chunk]:
        return [
            Chunk(*row)
            for row in self.conn.execute(
                "SELECT id, memory_id, seq, text, content_hash FROM chunks WHERE memory_id = ? ORDER BY seq",
                (memory_id,),
            )
        ]

    def chunk_rows(self, chunk_ids: Sequence[int]) -> dict[int, tuple[str, Memory]]:
        """Text and memory of each chunk id (missing ids are left out)."""
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.conn.execute(
            f"SELECT c.id, c.text, {', '.join('m.' + c.strip() for c in MEMORY_COLUMNS.split(','))}"
            f" FROM chunks c JOIN memories m ON m.id = c.memory_id WHERE c.id IN ({marks})",
            list(chunk_ids),
        )
        return {row[0]: (row[1], memory_from_row(row[2:])) for row in rows}

    def list_memories(
        self,
        project: str | None = None,
        all_projects: bool = True,
        kind: str | None = None,
        limit: int = 100,
        before: tuple[float, int] | None = None,
    ) -> list[Memory]:
        """Newest first (id breaking ties); ``before``: those after (created_at, id) in that order, a
        next page found by the index rather than by skipping the pages before it (OFFSET)."""
        where, args = ["1 = 1"], list[object]()
        if not all_projects:
            where.append("(project IS ? OR project IS NULL)")
            args.append(project)
        if kind:
            where.append("kind = ?")
            args.append(kind)
        if before is not None:
            where.append("(created_at < ? OR (created_at = ? AND id < ?))")
            args.extend((before[0], before[0], before[1]))
        rows = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {' AND '.join(where)}"
            " ORDER BY created_at DESC, id DESC LIMIT ?",
            (*args, limit),
        )
        return [memory_from_row(r) for r in rows]

    def superseded(self) -> list[Superseded]:
        """Every superseded memory, by id."""
        return [
            Superseded(a, b, bool(auto), title)
            for a, b, auto, title in self.conn.execute(
                "SELECT id, superseded_by, supersede_auto, title FROM memories WHERE superseded_by IS NOT NULL"
                " ORDER BY id"
            )
        ]

    def first_chunks(self, memory_ids: Sequence[int]) -> dict[int, str]:
        """Each memory's first chunk text."""
        marks = ",".join("?" * len(memory_ids))
        return dict(
            self.conn.execute(
                f"SELECT memory_id, text FROM chunks WHERE seq = 0 AND memory_id IN ({marks})", list(memory_ids)
            )
        )

    def current_observations_like(self, memory: Memory, pattern: str) -> list[tuple[int, str, str]]:
        """(id, title, body) of current observations of ``memory``'s project and branch, other than
        it, whose title (or, untitled, the start of the body) matches the LIKE ``pattern``; newest first."""
        return self.conn.execute(
            "SELECT id, title, body FROM memories WHERE kind = 'observation' AND id != ? AND superseded_by IS NULL"
            " AND origin != 'git' AND project IS ? AND branch IS ?"
            " AND (title LIKE ? ESCAPE '\\' OR (title = '' AND substr(ltrim(body), 1, 400) LIKE ? ESCAPE '\\'))"
            " ORDER BY created_at DESC",
            (memory.id, memory.project, memory.branch, pattern, pattern),
        ).fetchall()

    def sample_vectors(self, count: int) -> list[tuple[int, str, np.ndarray]]:
        """(chunk id, text, stored vector) of up to ``count`` chunks spread evenly over the ids."""
        conn = self.conn
        low, high = conn.execute("SELECT min(id), max(id) FROM chunks WHERE has_vector = 1").fetchone()
        if low is None:
            return []
        ids: list[int] = []
        for step in range(count):
            start = low + (high - low) * step // max(1, count - 1)
            row = conn.execute(
                "SELECT id FROM chunks WHERE has_vector = 1 AND id >= ? ORDER BY id LIMIT 1", (start,)
            ).fetchone()
            if row and row[0] not in ids:
                ids.append(row[0])
        marks = ",".join("?" * len(ids))
        texts = dict(conn.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks})", ids))
        vectors = {
            rowid: np.frombuffer(blob, np.float32)
            for rowid, blob in conn.execute(
                f"SELECT rowid, embedding FROM {self.vec_table} WHERE rowid IN ({marks})", ids
            )
        }
        return [(i, texts[i], vectors[i]) for i in ids if i in vectors and i in texts]

    def chunk_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def memory_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def pending_count(self) -> int:
        """Chunks waiting for a vector: 0.05 ms on its partial index, where ``counts`` takes ~30 ms
        at 13,000 chunks (it counts the keyword and vector tables too)."""
        return self.conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 0").fetchone()[0]

    def counts(self) -> dict[str, int]:
        conn = self.conn
        counts = {
            "memories": conn.execute("SELECT count(*) FROM memories").fetchone()[0],
            "chunks": conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
            "fts_rows": conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0],
            "pending_vectors": self.pending_count(),
        }
        if self.table_exists("curated_fts"):  # curated text indexed again (migration 9)
            counts["curated_chunks"] = conn.execute(
                "SELECT count(*) FROM chunks c JOIN memories m ON m.id = c.memory_id WHERE m.kind != 'observation'"
            ).fetchone()[0]
            counts["curated_fts_rows"] = conn.execute("SELECT count(*) FROM curated_fts").fetchone()[0]
        counts["vectors"] = (
            conn.execute(f"SELECT count(*) FROM {self.vec_table}").fetchone()[0]
            if self.vec_available and self.table_exists(self.vec_table)
            else 0
        )
        for kind, n in conn.execute("SELECT kind, count(*) FROM memories GROUP BY kind"):
            counts[kind] = n
        return counts

    # -- what only a team store has, answered as a file has it ------------------------------

    def schema_version(self) -> int | None:
        """The newest migration applied (store/migrations.py)."""
        return self.conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]

    def time_limit(self, seconds: float | None) -> AbstractContextManager[None]:
        """No bound: a file has no server to cancel a statement (its lock waits are bounded)."""
        return nullcontext()

    def cancel(self) -> None:
        """Nothing runs elsewhere to cancel."""

    def grant_problem(self, project: str | None, all_projects: bool = False) -> str | None:
        """None: whoever may open the file reads all of it."""
        return None

    def exact_index(self) -> VectorIndex:
        """Exact KNN with sqlite-vec over this file."""
        from captain_memo.store.search import SqliteVecIndex

        return SqliteVecIndex(self)

    def touched_paths(self) -> TouchedPaths:
        """Every path each stored commit touched (store/touched.py)."""
        return TouchedPaths(self)

    # -- checks and repairs of the file (`captain-memo doctor`) -------------------------------

    def sqlite_vec_version(self) -> str:
        from captain_memo.store.health import sqlite_vec_version

        return sqlite_vec_version(self.conn)

    def fts5_compiled(self) -> bool:
        from captain_memo.store.health import fts5_compiled

        return fts5_compiled(self.conn)

    def integrity(self) -> str:
        """``PRAGMA integrity_check``: "ok", or its first few problems on one line."""
        from captain_memo.store.health import integrity

        return integrity(self.conn)

    def fields_of_wrong_type(self, limit: int = 1000) -> list[tuple[int, str, str]]:
        """(memory id, column, the type it holds) for each field of the wrong type (store/field_types.py)."""
        from captain_memo.store.field_types import wrong_types

        return wrong_types(self.conn, limit)

    def repair_fields(self) -> list[str]:
        """Mend every field of the wrong type in one transaction; returns what was changed, one line each."""
        from captain_memo.store.field_types import repair

        with self.write() as conn:
            return repair(conn)


def _refused_row(exc: Exception, path: Path) -> StoreError:
    """SQLite's refusal of a row as the project's error: a source key stored already by another
    writer is a DuplicateKeyError the caller can act on; any other constraint is named."""
    if "memories_source_key" in str(exc) or "memories.source_key" in str(exc):
        return DuplicateKeyError(f"{path}: a memory with this source key is stored already")
    return StoreError(f"cannot save to {path}: {exc}")


if TYPE_CHECKING:  # mypy checks that the local store is a MemoryStore; nothing runs here

    def _is_a_memory_store(store: Store) -> MemoryStore:
        return store
