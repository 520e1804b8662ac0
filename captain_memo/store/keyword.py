"""The local store's keyword searches: FTS5's bm25, scoped inside the query.

Scope is the caller's project plus personal notes (project NULL), applied in the search itself:
filtering a global top 25 afterwards would starve small projects. The team store runs the same
searches with the same bm25 (store/postgres/keyword.py); store/search.py hands them to either.
"""

from __future__ import annotations

from collections.abc import Sequence

from captain_memo.store.db import Database
from captain_memo.store.protocol import Scope

FTS_TABLE = "chunks_fts"  # every chunk
CURATED_TABLE = "curated_fts"  # curated text's chunks again, with statistics of their own (migration 9)


class KeywordSearch(Database):
    """FTS5 searches over one SQLite file (mixed into ``Store``)."""

    def keyword_leg(self, match: str | None, scope: Scope, k: int) -> dict[int, float]:
        """FTS5 top k: chunk id -> bm25 relevance (negated, so higher is better)."""
        return self._top(FTS_TABLE, match, scope, k)

    def curated_keyword_leg(self, match: str | None, scope: Scope, k: int) -> dict[int, float] | None:
        """The top k of curated text (every memory but observations), its bm25 computed with curated
        text's own statistics; None from a store without that index (read-only, not migrated)."""
        return self._top(CURATED_TABLE, match, scope, k) if self.table_exists(CURATED_TABLE) else None

    def _top(self, table: str, match: str | None, scope: Scope, k: int) -> dict[int, float]:
        if match is None:
            return {}
        if scope.all_projects:
            sql = f"SELECT rowid, bm25({table}) AS rank FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?"
            return {chunk_id: -rank for chunk_id, rank in self.conn.execute(sql, (match, k))}
        # FTS5 scores every matching row before it returns the best one, so rank them all there (FTS
        # alone, never joined) and look up the scope of only as many as it takes to find k in scope.
        # Joining every hit to its memory first cost as much again as the ranking: 65 ms against
        # 19 ms for 4,800 hits at 150,000 chunks.
        conn = self.conn
        ranked = conn.execute(
            f"SELECT rowid, bm25({table}) AS rank FROM {table} WHERE {table} MATCH ? ORDER BY rank", (match,)
        )
        found: dict[int, float] = {}
        batch = max(k, 16)
        while len(found) < k and (rows := ranked.fetchmany(batch)):
            marks = ",".join("?" * len(rows))
            inside = {
                chunk_id
                for chunk_id, project in conn.execute(
                    "SELECT c.id, m.project FROM chunks c JOIN memories m ON m.id = c.memory_id"
                    f" WHERE c.id IN ({marks})",
                    [row[0] for row in rows],
                )
                if project is None or project == scope.project
            }
            for chunk_id, rank in rows:
                if chunk_id in inside and len(found) < k:
                    found[chunk_id] = -rank
            batch = min(batch * 4, 4096)  # a small project's hits can sit deep in the global ranking
        ranked.close()
        return found

    def observation_chunks(self, chunk_ids: Sequence[int]) -> set[int]:
        """Those of ``chunk_ids`` that are part of an observation (a commit, a capture)."""
        if not chunk_ids:
            return set()
        marks = ",".join("?" * len(chunk_ids))
        rows = self.conn.execute(
            "SELECT c.id FROM chunks c JOIN memories m ON m.id = c.memory_id"
            f" WHERE c.id IN ({marks}) AND m.kind = 'observation'",
            list(chunk_ids),
        )
        return {chunk_id for (chunk_id,) in rows}

    def chunk_estimate(self) -> int:
        """About how many chunks there are: the highest id, O(log n), where count(*) reads them all."""
        return self.conn.execute("SELECT ifnull(max(id), 0) FROM chunks").fetchone()[0]

    def phrase_rows_up_to(self, phrase: str, cap: int) -> int:
        """How many chunks hold ``phrase``, counting no further than ``cap``."""
        return self.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", (phrase, cap)
        ).fetchone()[0]

    def keyword_scores(self, match: str | None, chunk_ids: Sequence[int]) -> dict[int, float]:
        """bm25 relevance of given chunks (those that do not match at all are left out), computed over
        the whole index: the same statistics as the keyword leg."""
        return self._scores(FTS_TABLE, match, chunk_ids)

    def curated_keyword_scores(self, match: str | None, chunk_ids: Sequence[int]) -> dict[int, float] | None:
        """bm25 relevance of those of given chunks that are curated text, with curated text's own
        statistics (``curated_keyword_leg``); None when the store has no such index."""
        if not self.table_exists(CURATED_TABLE):
            return None
        return self._scores(CURATED_TABLE, match, chunk_ids)

    def _scores(self, table: str, match: str | None, chunk_ids: Sequence[int]) -> dict[int, float]:
        if match is None or not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.conn.execute(
            f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ? AND rowid IN ({marks})",
            (match, *chunk_ids),
        )
        return {chunk_id: -rank for chunk_id, rank in rows}

    def newest_matching(self, topic: tuple[str | None, str | None], scope: Scope, k: int) -> list[int]:
        """Chunk ids of the ``k`` newest observations in scope matching a temporal query's topic
        (store/search.py's ``newest_matching`` says why)."""
        found: list[int] = []
        where, args = "m.kind = 'observation'", []
        if not scope.all_projects:
            where += " AND (m.project IS NULL OR m.project = ?)"
            args.append(scope.project)
        for match in dict.fromkeys(m for m in topic if m):
            if len(found) >= k:
                break
            # FTS alone first (never joined inside the MATCH), then the dates of the matching memories.
            rows = self.conn.execute(
                "WITH hits AS (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)"
                " SELECT min(c.id) FROM hits JOIN chunks c ON c.id = hits.rowid JOIN memories m ON m.id = c.memory_id"
                f" WHERE {where} GROUP BY m.id ORDER BY max(m.created_at) DESC LIMIT ?",
                (match, *args, k),
            )
            for (chunk_id,) in rows:
                if chunk_id not in found and len(found) < k:
                    found.append(chunk_id)
        return found
