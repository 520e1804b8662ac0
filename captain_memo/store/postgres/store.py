"""The team store: memories on PostgreSQL + pgvector, with the methods the engine uses on the
local ``Store`` (store/store.py), so recall and ranking run on it unchanged.

Rows carry the project's portable identity (a string; '' for none, shown as None) and their
author, the Postgres role that wrote them. What a role may read and change is decided by the
database's row-level security (schema.py), never by this client.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from captain_memo.base.chunking import content_hash
from captain_memo.config import RankConfig
from captain_memo.errors import NotFoundError, ReadOnlyStoreError, StoreError
from captain_memo.records import TEAM, Chunk, Memory, MemoryRef, NewMemory, Superseded
from captain_memo.store.postgres import schema
from captain_memo.store.postgres.bulk import BulkLoad
from captain_memo.store.postgres.connection import Connections, Refused
from captain_memo.store.postgres.keyword import TeamKeywordSearch, scope_sql
from captain_memo.store.postgres.models import ModelBinding
from captain_memo.store.postgres.sources import TeamSourceRows
from captain_memo.store.postgres.terms import Tokenizer
from captain_memo.store.postgres.vectors import EF_SEARCH, PgVectorIndex, vector_text
from captain_memo.store.rows import BODY_COLUMNS, NEW_COLUMNS, new_row, row_id, setting, text_row
from captain_memo.store.store import memory_from_row

if TYPE_CHECKING:
    from captain_memo.store.protocol import MemoryStore, VectorIndex


def team_memory(row) -> Memory:
    """A memory read with MEMORY_COLUMNS: the local store's fields and its author."""
    return replace(memory_from_row(row[:-1]), author=row[-1])


# What superseded a memory, when this role may read it: a link the owner made to another project (or
# one made before members' links were checked) names no id the role could not look up otherwise.
READABLE_SUPERSEDER = "(SELECT s.id FROM memories s WHERE s.id = m.superseded_by)"
# The local store's columns, with '' (no project) read back as None.
MEMORY_COLUMNS = (
    "m.id, m.kind, m.title, m.body, m.created_at, m.updated_at, nullif(m.project, ''), m.branch, m.source_path,"
    f" m.line_start, m.line_end, m.source_commit, m.origin, m.filetype, m.content_hash, {READABLE_SUPERSEDER},"
    " m.stability, m.last_surfaced, m.opened_in_full, m.source_key, m.tags, m.last_opened,"
    " NULL::bigint,"  # superseded_by_team: a team memory is superseded only within the team store
    " m.author::text"  # who wrote it (read by ``team_memory``)
)
NEW_MARKS = ", ".join(["%s"] * len(NEW_COLUMNS.split(",")))


def team_ref(memory_id: int) -> str:
    """How a team memory is named to people: ``t8`` (records.py's MemoryRef)."""
    return str(MemoryRef(TEAM, memory_id))


def grant_sql(role: str, project: str, curate: bool | None = None) -> str:
    """The statement the store's owner runs to let ``role`` read and write ``project`` (and, with
    ``curate``, change anyone's memories in it)."""

    def quoted(text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    if curate is None:
        return f"INSERT INTO grants (role, project) VALUES ({quoted(role)}, {quoted(project)})"
    return (
        f"INSERT INTO grants (role, project, curate) VALUES ({quoted(role)}, {quoted(project)}, {str(curate).lower()})"
        " ON CONFLICT (role, project) DO UPDATE SET curate = excluded.curate;"
    )


def no_grant(role: str, project: str | None) -> str:
    """Why a role reads nothing of a project and may not write to it, and the owner's command."""
    return (
        f"your role {role} has no grant for project '{project or ''}' in the team store; ask the store's owner"
        f" to run: {grant_sql(role, project or '')}"
    )


def _session_settings(conn) -> None:
    # At least EF_SEARCH, or more when the administrator set a larger database default (a
    # store of a million chunks needs more; doc/team.md).
    conn.execute(
        "SELECT set_config('hnsw.ef_search',"
        " greatest(%s, coalesce(current_setting('hnsw.ef_search', true)::int, 0))::text, false)",
        (EF_SEARCH,),
    )
    conn.execute("SET hnsw.iterative_scan = strict_order")


class TeamStore(ModelBinding, TeamSourceRows, TeamKeywordSearch, BulkLoad):
    """One team database. ``TeamStore(dsn)`` connects, applies pending migrations (when this role
    may), and refuses writes to a schema newer than this client knows."""

    # The engine checks the local store's model when it opens it; a team store with another model
    # still answers from its keywords, so only its vector leg and its vectors are refused.
    checks_model_at_open = False
    vec_available = True

    def __init__(
        self, dsn: str, initial_stability: float = RankConfig.tide_initial_stability, timeout_s: float | None = None
    ):
        """``timeout_s``: the longest a connection attempt or a statement may take (None: 5 s to
        connect, statements unbounded until ``time_limit`` says otherwise)."""
        self._conns = Connections(dsn, _session_settings, timeout_s)
        self.path = self._conns.where  # what messages name: the masked connection string
        self.initial_stability = initial_stability
        self.tokenizer = Tokenizer()
        self.read_only_reason: str | None = None
        self._bound: tuple[str, int] | None = None
        # keyword.py's idf and avgdl of recent queries, by (curated text's statistics or not, query)
        self._statistics: dict[tuple[bool, str], tuple[float, list[float], float]] = {}
        with self.errors():
            found = schema.migrate(self.conn, self.path)
        if found > schema.LATEST:
            self.read_only_reason = schema.newer_schema(found, self.path)

    # -- connections --------------------------------------------------------------------

    @property
    def conn(self):
        return self._conns.conn

    def errors(self):
        return self._conns.errors()

    @contextmanager
    def time_limit(self, seconds: float | None) -> Iterator[None]:
        """Every statement run meanwhile (by any thread) is cancelled by the server, and waits for a
        lock no longer than, ``seconds``: an operation's caller never gives up on a statement that
        then commits."""
        before, self._conns.limit_s = self._conns.limit_s, seconds
        try:
            yield
        finally:
            self._conns.limit_s = before

    def cancel(self) -> None:
        """Cancel the statements running now (their caller stopped waiting)."""
        self._conns.cancel()

    def fetch(self, sql: str, params: Sequence = ()) -> list[tuple]:
        with self.errors():
            return self.conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: Sequence = ()):
        rows = self.fetch(sql, params)
        return rows[0] if rows else None

    @contextmanager
    def write(self) -> Iterator:
        """One transaction; refused on a schema newer than this client knows."""
        self.require_writable()
        try:
            with self.errors():
                conn = self.conn
                with conn.transaction():
                    yield conn
        except BaseException:
            self._bound = None  # a model recorded in the transaction went with it: read it again
            raise

    def close(self) -> None:
        self._conns.close()
        self.tokenizer.close()

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None

    def require_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyStoreError(f"cannot write to the team store: {self.read_only_reason}")

    def check_writable(self) -> None:
        with self.write() as conn:
            conn.execute("SELECT 1")

    def meta(self, key: str, default: str | None = None) -> str | None:
        row = self.one("SELECT value FROM team_meta WHERE key = %s", (key,))
        return row[0] if row else default

    def schema_version(self) -> int:
        with self.errors():
            return schema.applied_version(self.conn)

    def exact_index(self) -> VectorIndex:
        """Nearest chunks with pgvector."""
        return PgVectorIndex(self)

    def touched_paths(self) -> None:
        """None: a team store keeps no touched paths (a change question is answered by relevance
        and recency there)."""
        return None

    # -- writing ------------------------------------------------------------------------

    def add(
        self, memory: NewMemory, chunks: Sequence[str], vectors: np.ndarray | None, now: float | None = None
    ) -> int:
        return self.add_many([(memory, chunks, vectors)], now)[0]

    def add_many(
        self, items: Sequence[tuple[NewMemory, Sequence[str], np.ndarray | None]], now: float | None = None
    ) -> list[int]:
        """Insert memories with their chunks (tokens and vectors) in one transaction; their ids."""
        now = time.time() if now is None else now
        tokens = iter(self.tokenizer.tokens([text for _, chunks, _ in items for text in chunks]))
        try:
            return self._insert(items, tokens, now)
        except Refused:
            for project in {memory.project for memory, _, _ in items}:
                if (problem := self.grant_problem(project)) is not None:
                    raise StoreError(problem) from None
            raise

    def _insert(self, items, tokens, now: float) -> list[int]:
        ids = []
        with self.write() as conn:
            for memory, chunks, vectors in items:
                memory_id = conn.execute(
                    f"INSERT INTO memories ({NEW_COLUMNS}) VALUES ({NEW_MARKS}) RETURNING id",
                    new_row(memory, now, self.initial_stability, memory.project or ""),
                ).fetchone()[0]
                rows = [
                    (seq, text, next(tokens), None if vectors is None else vectors[seq])
                    for seq, text in enumerate(chunks)
                ]
                self.insert_chunks(conn, memory_id, memory.project, rows)
                ids.append(memory_id)
        return ids

    def insert_chunks(self, conn, memory_id: int, project: str | None, rows: Iterable[tuple]) -> None:
        """Chunk rows (seq, text, FTS5 tokens, vector or None) of one memory, in the caller's transaction."""
        if not (given := list(rows)):
            return
        values = [
            (memory_id, project or "", seq, text, content_hash(text), terms, None if v is None else vector_text(v))
            for seq, text, terms, v in given
        ]
        sql = (
            "INSERT INTO chunks (memory_id, project, seq, text, content_hash, terms, embedding)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s::vector)"
        )
        if all(vector is None for *_, vector in given):
            conn.cursor().executemany(sql, values)
            return
        with self.vectors_written(conn):
            conn.cursor().executemany(sql, values)

    def replace_body(
        self, memory_id: int, memory: NewMemory, chunks: Sequence[str], vectors: np.ndarray | None
    ) -> None:
        """Update a memory's text in place (its id and Tide fields stay); every chunk is rebuilt."""
        tokens = self.tokenizer.tokens(list(chunks))
        with self.write() as conn:
            self._changed(
                conn.execute(
                    f"UPDATE memories SET {setting(BODY_COLUMNS, '%s')} WHERE id = %s RETURNING id",
                    (*text_row(memory, time.time(), BODY_COLUMNS), memory_id),
                ),
                conn,
                memory_id,
            )
            conn.execute("DELETE FROM chunks WHERE memory_id = %s", (memory_id,))
            rows = [
                (seq, text, tokens[seq], None if vectors is None else vectors[seq]) for seq, text in enumerate(chunks)
            ]
            self.insert_chunks(conn, memory_id, memory.project, rows)

    def _changed(self, cursor, conn, memory_id: int) -> None:
        """Raise when an UPDATE or DELETE of one memory touched no row: none such, or not this role's."""
        if cursor.fetchone() is not None:
            return
        row = conn.execute("SELECT author, project FROM memories WHERE id = %s", (memory_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no memory with id {team_ref(memory_id)}")
        author, project = row
        raise StoreError(
            f"memory {team_ref(memory_id)} in the team store was written by {author}: only its author or a role "
            f"granted curate on project {project or '(none)'} may change it"
        )

    def delete(self, memory_id: int) -> None:
        if (found := row_id(memory_id)) is None:
            raise NotFoundError(f"no memory with id {team_ref(memory_id)}")
        memory_id = found
        with self.write() as conn:
            self._changed(
                conn.execute("DELETE FROM memories WHERE id = %s RETURNING id", (memory_id,)), conn, memory_id
            )

    def set_vectors(self, chunk_ids: Sequence[int], vectors: np.ndarray, table: str | None = None) -> None:
        """Vectors for chunks saved without one (the embedder was down)."""
        self.require_bound()
        with self.write() as conn, self.vectors_written(conn):
            conn.cursor().executemany(
                "UPDATE chunks SET embedding = %s::vector WHERE id = %s",
                [(vector_text(v), chunk_id) for chunk_id, v in zip(chunk_ids, vectors)],
            )

    @staticmethod
    def _exists(conn, memory_id) -> bool:
        found = row_id(memory_id)
        return (
            found is not None and conn.execute("SELECT 1 FROM memories WHERE id = %s", (found,)).fetchone() is not None
        )

    def set_superseded(self, old_id: int, new_id: int | None, automatic: bool = False) -> int | None:
        """Mark ``old_id`` superseded by ``new_id`` (None clears it); returns what superseded it before."""
        with self.write() as conn:
            for mid in (old_id, new_id):
                if mid is not None and not self._exists(conn, mid):
                    raise NotFoundError(f"no memory with id {team_ref(mid)}")
            old_id, new_id = operator.index(old_id), None if new_id is None else operator.index(new_id)
            previous = conn.execute(
                f"SELECT {READABLE_SUPERSEDER} FROM memories m WHERE m.id = %s", (old_id,)
            ).fetchone()[0]
            self._changed(
                conn.execute(
                    "UPDATE memories SET superseded_by = %s, supersede_auto = %s WHERE id = %s RETURNING id",
                    (new_id, automatic and new_id is not None, old_id),
                ),
                conn,
                old_id,
            )
        return previous

    def record_surfacing(
        self, updates: Iterable[tuple[int, float]], now: float, opened: bool = False, patient: bool = True
    ) -> None:
        """Tide's fields; row-level security leaves out memories this role may not change. Every team
        write has its lock timeout, so ``patient`` changes nothing here."""
        rows = [(stability, now, opened, opened, now, memory_id) for memory_id, stability in updates]
        if not rows:
            return
        with self.write() as conn:
            conn.cursor().executemany(
                "UPDATE memories SET stability = %s, last_surfaced = %s, opened_in_full = opened_in_full OR %s,"
                " last_opened = CASE WHEN %s THEN %s ELSE last_opened END WHERE id = %s",
                rows,
            )

    def checkpoint(self) -> None:
        """Nothing to fold: the server keeps its own write-ahead log."""

    def pending_chunks(self, limit: int = 256) -> list[tuple[int, str]]:
        """Chunks without a vector that this role may give one (its own, or a project it curates)."""
        return self.fetch(
            "SELECT c.id, c.text FROM chunks c JOIN memories m ON m.id = c.memory_id WHERE c.embedding IS NULL"
            " AND (m.author = current_user OR m.project IN"
            " (SELECT g.project FROM grants g WHERE g.role = current_user AND g.curate))"
            " ORDER BY c.id LIMIT %s",
            (limit,),
        )

    # -- reading ------------------------------------------------------------------------

    def get(self, memory_id: int) -> Memory:
        found = row_id(memory_id)
        row = (
            self.one(f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.id = %s", (found,))
            if found is not None
            else None
        )
        if row is None:
            raise NotFoundError(f"no memory with id {team_ref(memory_id)}")
        return team_memory(row)

    def grant_problem(self, project: str | None, all_projects: bool = False) -> str | None:
        """Why this role sees nothing of ``project`` (of any project, with ``all_projects``): it has
        no grant; None when it has one, or needs none (the owner)."""
        role, owner, granted = self.one(
            "SELECT current_user::text, (SELECT relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)"
            " OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) FROM pg_class"
            " WHERE oid = 'memories'::regclass), EXISTS (SELECT 1 FROM grants WHERE role = current_user"
            " AND (%s OR project = %s))",
            (all_projects, project or ""),
        )
        if owner or granted:
            return None
        if all_projects:
            return f"your role {role} has no grant for any project in the team store; ask the store's owner for one"
        return no_grant(role, project)

    def authors(self, memory_ids: Sequence[int]) -> dict[int, str]:
        """The role that wrote each memory."""
        return dict(self.fetch("SELECT id, author FROM memories WHERE id = ANY(%s)", (list(memory_ids),)))

    def find_by_hash(self, digest: str, project: str | None) -> int | None:
        row = self.one(
            "SELECT id FROM memories WHERE content_hash = %s AND project = %s LIMIT 1", (digest, project or "")
        )
        return row[0] if row else None

    def find_by_source_key(self, source_key: str, project: str | None) -> Memory | None:
        row = self.one(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.source_key = %s AND m.project = %s",
            (source_key, project or ""),
        )
        return team_memory(row) if row else None

    def missing_vectors(self, memory_id: int) -> int:
        return self.one("SELECT count(*) FROM chunks WHERE memory_id = %s AND embedding IS NULL", (memory_id,))[0]

    def chunks_of(self, memory_id: int) -> list[Chunk]:
        return [
            Chunk(*row)
            for row in self.fetch(
                "SELECT id, memory_id, seq, text, content_hash FROM chunks WHERE memory_id = %s ORDER BY seq",
                (memory_id,),
            )
        ]

    def chunk_rows(self, chunk_ids: Sequence[int]) -> dict[int, tuple[str, Memory]]:
        """Text and memory of each chunk id (missing ids are left out)."""
        if not chunk_ids:
            return {}
        rows = self.fetch(
            f"SELECT c.id, c.text, {MEMORY_COLUMNS} FROM chunks c JOIN memories m ON m.id = c.memory_id"
            " WHERE c.id = ANY(%s)",
            (list(chunk_ids),),
        )
        return {row[0]: (row[1], team_memory(row[2:])) for row in rows}

    def list_memories(
        self, project: str | None = None, all_projects: bool = True, kind: str | None = None, limit: int = 100
    ) -> list[Memory]:
        params: list = []
        where = ["true"]
        if not all_projects:
            where.append(scope_sql(project, False, params, "m.project"))
        if kind:
            where.append("m.kind = %s")
            params.append(kind)
        params.append(None if limit < 0 else limit)
        rows = self.fetch(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {' AND '.join(where)} ORDER BY m.created_at DESC LIMIT %s",
            params,
        )
        return [team_memory(r) for r in rows]

    def superseded(self) -> list[Superseded]:
        return [
            Superseded(a, b, bool(auto), title)
            for a, b, auto, title in self.fetch(
                f"SELECT m.id, {READABLE_SUPERSEDER} AS b, m.supersede_auto, m.title FROM memories m"
                f" WHERE {READABLE_SUPERSEDER} IS NOT NULL ORDER BY m.id"
            )
        ]

    def first_chunks(self, memory_ids: Sequence[int]) -> dict[int, str]:
        return dict(
            self.fetch("SELECT memory_id, text FROM chunks WHERE seq = 0 AND memory_id = ANY(%s)", (list(memory_ids),))
        )

    def current_observations_like(self, memory: Memory, pattern: str) -> list[tuple[int, str, str]]:
        """As the local store's: current observations of the memory's project and branch whose title
        (or, untitled, the start of the body) matches the LIKE ``pattern``; newest first."""
        return self.fetch(
            "SELECT id, title, body FROM memories WHERE kind = 'observation' AND id != %s AND superseded_by IS NULL"
            " AND origin != 'git' AND project = %s AND branch IS NOT DISTINCT FROM %s"
            " AND (title ILIKE %s OR (title = '' AND substr(ltrim(body), 1, 400) ILIKE %s))"
            " ORDER BY created_at DESC",
            (memory.id, memory.project or "", memory.branch, pattern, pattern),
        )

    def sample_vectors(self, count: int) -> list[tuple[int, str, np.ndarray]]:
        """(chunk id, text, stored vector) of up to ``count`` chunks spread over the ids."""
        rows = self.fetch(
            "SELECT id, text, embedding::text FROM chunks WHERE id IN (SELECT min(id) FROM"
            " (SELECT id, ntile(%s) OVER (ORDER BY id) AS part FROM chunks WHERE embedding IS NOT NULL) u"
            " GROUP BY part) ORDER BY id",
            (max(1, count),),
        )
        return [(i, text, np.array(vector.strip("[]").split(","), dtype=np.float32)) for i, text, vector in rows]

    def pending_count(self) -> int:
        """Chunks waiting for a vector (on the partial index of chunks without one)."""
        return self.one("SELECT count(*) FROM chunks WHERE embedding IS NULL")[0]

    # Vectors live in the chunks table itself (no separate vector table, none swapped by a reindex).
    vec_table = "chunks"

    def table_exists(self, name: str) -> bool:
        return self.one("SELECT to_regclass(%s) IS NOT NULL", (name,))[0]

    def chunk_count(self) -> int:
        return self.one("SELECT count(*) FROM chunks")[0]

    def memory_count(self) -> int:
        return self.one("SELECT count(*) FROM memories")[0]

    def counts(self) -> dict[str, int]:
        memories, chunks, pending = self.one(
            "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM chunks),"
            " (SELECT count(*) FROM chunks WHERE embedding IS NULL)"
        )
        counts = {
            "memories": memories,
            "chunks": chunks,
            "fts_rows": chunks,  # every chunk row holds its tokens
            "pending_vectors": pending,
            "vectors": chunks - pending,
        }
        counts.update(dict(self.fetch("SELECT kind, count(*) FROM memories GROUP BY kind")))
        return counts


if TYPE_CHECKING:  # mypy checks that the team store is a MemoryStore; nothing runs here

    def _is_a_memory_store(store: TeamStore) -> MemoryStore:
        return store
