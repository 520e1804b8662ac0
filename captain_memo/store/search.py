"""The two search legs over the store, both scoped inside the search.

Scope is the caller's project plus personal notes (project NULL), applied in the query itself:
filtering a global top 25 afterwards would starve small projects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Union

import numpy as np

from captain_memo.errors import StoreError
from captain_memo.store.store import Store, vector_blob

if TYPE_CHECKING:
    from captain_memo.store.postgres import TeamStore

log = logging.getLogger("captain_memo")
# The stores the searches run on: the local SQLite store, or the team store (store/postgres).
AnyStore = Union[Store, "TeamStore"]


@dataclass(frozen=True)
class Scope:
    """Which memories a search may return: one project plus personal notes, or everything."""

    project: str | None = None
    all_projects: bool = False

    @property
    def partitions(self) -> tuple[str, ...] | None:
        """vec0 partition values to search, or None for all."""
        if self.all_projects:
            return None
        return ("",) if not self.project else (self.project, "")


def _elsewhere(store: AnyStore) -> TeamStore | None:
    """A store other than SQLite (the team store, store/postgres) that runs the keyword searches
    itself, with the same bm25; None for the local store."""
    return None if isinstance(store, Store) else store


def keyword_leg(store: AnyStore, match: str | None, scope: Scope, k: int) -> dict[int, float]:
    """FTS5 top k: chunk id -> bm25 relevance (negated, so higher is better)."""
    if match is None:
        return {}
    if (other := _elsewhere(store)) is not None:
        return other.keyword_leg(match, scope, k)
    if scope.all_projects:
        sql = "SELECT rowid, bm25(chunks_fts) AS rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?"
        return {chunk_id: -rank for chunk_id, rank in store.conn.execute(sql, (match, k))}
    # FTS5 scores every matching row before it returns the best one, so rank them all there (FTS
    # alone, never joined) and look up the scope of only as many as it takes to find k in scope.
    # Joining every hit to its memory first cost as much again as the ranking: 65 ms against
    # 19 ms for 4,800 hits at 150,000 chunks.
    conn = store.conn
    ranked = conn.execute(
        "SELECT rowid, bm25(chunks_fts) AS rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank", (match,)
    )
    found: dict[int, float] = {}
    batch = max(k, 16)
    while len(found) < k and (rows := ranked.fetchmany(batch)):
        marks = ",".join("?" * len(rows))
        inside = {
            chunk_id
            for chunk_id, project in conn.execute(
                f"SELECT c.id, m.project FROM chunks c JOIN memories m ON m.id = c.memory_id WHERE c.id IN ({marks})",
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


# A phrase found in more chunks than this is left out of the keyword query when the query has a
# rarer one. FTS5 computes bm25 for every matching row before it picks the best (~3 µs a row; it
# has no top-k pruning), and the idf of each phrase needs a pass over all its rows: at 150,000
# chunks a query holding "the" and "error" matched 148,000 rows and took 700-850 ms, against
# ~10 ms with those two left out. Up to 10,000 chunks only phrases in more than half of them go,
# and FTS5 gives those an idf of 1e-6 anyway; above that, a phrase dropped has an idf below
# log(chunks / 5,000) while the phrases kept score higher.
COMMON_PHRASE_FLOOR = 5_000
COMMON_PHRASE_SHARE = 0.01


def selective_match(store: AnyStore, match: str | None, stopwords: frozenset[str]) -> str | None:
    """``match`` (an OR of quoted phrases from ``fts_match``) without its too common phrases;
    ``stopwords`` are never chosen as the one phrase kept when every phrase is common."""
    if match is None:
        return None
    other = _elsewhere(store)
    if other is not None:
        chunks = other.chunk_estimate()
    else:
        chunks = store.conn.execute("SELECT ifnull(max(id), 0) FROM chunks").fetchone()[0]  # ids ~ count, O(log n)
    limit = max(COMMON_PHRASE_FLOOR, int(COMMON_PHRASE_SHARE * chunks))
    phrases = match.split(" OR ")  # phrases are quoted lower-case words: no " OR " inside one
    if chunks <= limit or len(phrases) < 2:
        return match
    kept = [phrase for phrase in phrases if _rows_up_to(store, phrase, limit + 1) <= limit]
    if kept:
        return " OR ".join(kept)
    # Every phrase is common: search the rarest one that is not a stopword. Keeping them all cost
    # 100-400 ms at a million chunks (325,000 matching rows for "fix the gakibu felmoqua ... test").
    rarest, fewest = None, 8 * limit + 1
    for phrase in phrases:
        if phrase.strip('"') not in stopwords:
            rows = _rows_up_to(store, phrase, fewest)
            if rows < fewest:
                rarest, fewest = phrase, rows
    return rarest or match


def _rows_up_to(store: AnyStore, phrase: str, cap: int) -> int:
    """How many chunks hold ``phrase``, counting no further than ``cap``."""
    if (other := _elsewhere(store)) is not None:
        return other.phrase_rows_up_to(phrase, cap)
    return store.conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", (phrase, cap)
    ).fetchone()[0]


def keyword_scores(store: AnyStore, match: str | None, chunk_ids: Sequence[int]) -> dict[int, float]:
    """bm25 relevance of given chunks (those that do not match at all are left out).

    bm25 here is computed over the whole index, the same statistics as the keyword leg.
    """
    if match is None or not chunk_ids:
        return {}
    if (other := _elsewhere(store)) is not None:
        return other.keyword_scores(match, chunk_ids)
    marks = ",".join("?" * len(chunk_ids))
    rows = store.conn.execute(
        f"SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})",
        (match, *chunk_ids),
    )
    return {chunk_id: -rank for chunk_id, rank in rows}


def similarity(squared_distance: float) -> float:
    """Similarity of unit vectors from their squared L2 distance d²: 1 - d²/4, so 1 identical,
    0.5 orthogonal, 0 opposite (clamped to [0, 1] against rounding)."""
    return max(0.0, min(1.0, 1.0 - float(squared_distance) / 4.0))


class VectorIndex(Protocol):
    """Nearest chunks to a query vector, within a scope; what the vector leg searches."""

    def knn(self, query: np.ndarray, scope: Scope, k: int) -> dict[int, float]:
        """chunk id -> similarity for the k nearest chunks in scope."""
        ...

    def similarities(self, query: np.ndarray, chunk_ids: Sequence[int]) -> dict[int, float]:
        """Exact similarity of given chunks (chunks without a vector are left out)."""
        ...

    def close(self) -> None: ...


# sqlite-vec answers at most this many nearest neighbours per query (SQLITE_VEC_VEC0_K_MAX in 0.1).
MAX_K = 4096


def default_index(store: AnyStore) -> VectorIndex:
    """The exact vector index of a store: sqlite-vec for the local one, pgvector for the team's."""
    if isinstance(store, Store):
        return SqliteVecIndex(store)
    from captain_memo.store.postgres.vectors import PgVectorIndex

    return PgVectorIndex(store)


class SqliteVecIndex:
    """Exact KNN with sqlite-vec, one query per partition in scope."""

    def __init__(self, store: Store):
        self.store = store
        self._warned = False

    def _capped(self, k: int) -> int:
        if k <= MAX_K:
            return k
        if not self._warned:
            self._warned = True
            log.warning(
                "CAPTAIN_MEMO_CANDIDATES_PER_LEG=%d is more than the %d nearest neighbours sqlite-vec "
                "can give; the vector leg returns %d",
                k,
                MAX_K,
                MAX_K,
            )
        return MAX_K

    def close(self) -> None:
        """Nothing of its own to release: it reads the store's connection."""

    def _check(self) -> str | None:
        """The vector table, None before the first vector was stored; raises without sqlite-vec."""
        if not self.store.vec_available:
            raise StoreError(f"sqlite-vec is not available ({self.store.vec_error}); only keyword search works")
        table = self.store.vec_table
        return table if self.store.table_exists(table) else None

    def knn(self, query: np.ndarray, scope: Scope, k: int) -> dict[int, float]:
        """chunk id -> similarity for the k nearest chunks in scope."""
        table = self._check()
        if table is None:
            return {}
        blob = vector_blob(query)
        k = self._capped(k)
        found: dict[int, float] = {}
        partitions = scope.partitions
        if partitions is None:
            rows = self.store.conn.execute(
                f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ?", (blob, k)
            ).fetchall()
        else:
            rows = []
            for partition in partitions:
                rows += self.store.conn.execute(
                    f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? AND scope = ?",
                    (blob, k, partition),
                ).fetchall()
        for chunk_id, distance in sorted(rows, key=lambda r: r[1])[:k]:
            found[chunk_id] = similarity(distance * distance)
        return found

    def similarities(self, query: np.ndarray, chunk_ids: Sequence[int]) -> dict[int, float]:
        """Exact similarity of given chunks (chunks without a vector are left out)."""
        table = self._check()
        if table is None or not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.store.conn.execute(
            f"SELECT rowid, vec_distance_l2(embedding, ?) FROM {table} WHERE rowid IN ({marks})",
            (vector_blob(query), *chunk_ids),
        )
        return {chunk_id: similarity(distance * distance) for chunk_id, distance in rows}


def newest_matching(store: AnyStore, topic: tuple[str | None, str | None], scope: Scope, k: int) -> list[int]:
    """Chunk ids of the ``k`` newest observations in scope matching a temporal query's topic: those
    holding every topic word, then (when fewer than k do) any of them. Newest by the memory's date;
    the first chunk of each memory stands for it.

    The bm25 leg ranks by wording, so for "latest change to capture" the newest commit that touched
    capture.py can sit far below the top 25 (seen at #50+ in a history of 5,000 commits); this list
    puts it in the pool for recency to reorder.
    """
    if (other := _elsewhere(store)) is not None:
        return other.newest_matching(topic, scope, k)
    found: list[int] = []
    where, args = "m.kind = 'observation'", []
    if not scope.all_projects:
        where += " AND (m.project IS NULL OR m.project = ?)"
        args.append(scope.project)
    for match in dict.fromkeys(m for m in topic if m):
        if len(found) >= k:
            break
        # FTS alone first (never joined inside the MATCH), then the dates of the matching memories.
        rows = store.conn.execute(
            "WITH hits AS (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)"
            " SELECT min(c.id) FROM hits JOIN chunks c ON c.id = hits.rowid JOIN memories m ON m.id = c.memory_id"
            f" WHERE {where} GROUP BY m.id ORDER BY max(m.created_at) DESC LIMIT ?",
            (match, *args, k),
        )
        for (chunk_id,) in rows:
            if chunk_id not in found and len(found) < k:
                found.append(chunk_id)
    return found
