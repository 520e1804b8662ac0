"""The two search legs over the store, both scoped inside the search.

Scope is the caller's project plus personal notes (project NULL), applied in the query itself:
filtering a global top 25 afterwards would starve small projects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from captain_memo.errors import StoreError
from captain_memo.store.store import Store, vector_blob


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


def keyword_leg(store: Store, match: str | None, scope: Scope, k: int) -> dict[int, float]:
    """FTS5 top k: chunk id -> bm25 relevance (negated, so higher is better)."""
    if match is None:
        return {}
    if scope.all_projects:
        sql = ("SELECT rowid, bm25(chunks_fts) AS rank FROM chunks_fts WHERE chunks_fts MATCH ?"
               " ORDER BY rank LIMIT ?")
        args: tuple = (match, k)
    else:
        # FTS first, in a materialised CTE, then the scope join: the planner otherwise may drive the
        # query from memories and probe the FTS index once per row.
        sql = ("WITH hits AS MATERIALIZED (SELECT rowid AS chunk_id, bm25(chunks_fts) AS rank FROM chunks_fts"
               " WHERE chunks_fts MATCH ?)"
               " SELECT h.chunk_id, h.rank FROM hits h JOIN chunks c ON c.id = h.chunk_id"
               " JOIN memories m ON m.id = c.memory_id WHERE m.project IS NULL OR m.project = ?"
               " ORDER BY h.rank LIMIT ?")
        args = (match, scope.project, k)
    return {chunk_id: -rank for chunk_id, rank in store.conn.execute(sql, args)}


def keyword_scores(store: Store, match: str | None, chunk_ids: Sequence[int]) -> dict[int, float]:
    """bm25 relevance of given chunks (those that do not match at all are left out).

    bm25 here is computed over the whole index, the same statistics as the keyword leg.
    """
    if match is None or not chunk_ids:
        return {}
    marks = ",".join("?" * len(chunk_ids))
    rows = store.conn.execute(
        f"SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})",
        (match, *chunk_ids))
    return {chunk_id: -rank for chunk_id, rank in rows}


def similarity(distance: float) -> float:
    """Similarity of unit vectors from their L2 distance: 1 identical, 0.5 orthogonal, 0 opposite."""
    return max(0.0, min(1.0, 1.0 - distance * distance / 4.0))


class SqliteVecIndex:
    """Exact KNN with sqlite-vec, one query per partition in scope."""

    def __init__(self, store: Store):
        self.store = store

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
        found: dict[int, float] = {}
        partitions = scope.partitions
        if partitions is None:
            rows = self.store.conn.execute(
                f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ?", (blob, k)).fetchall()
        else:
            rows = []
            for partition in partitions:
                rows += self.store.conn.execute(
                    f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? AND scope = ?",
                    (blob, k, partition)).fetchall()
        for chunk_id, distance in sorted(rows, key=lambda r: r[1])[:k]:
            found[chunk_id] = similarity(distance)
        return found

    def similarities(self, query: np.ndarray, chunk_ids: Sequence[int]) -> dict[int, float]:
        """Exact similarity of given chunks (chunks without a vector are left out)."""
        table = self._check()
        if table is None or not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.store.conn.execute(
            f"SELECT rowid, vec_distance_l2(embedding, ?) FROM {table} WHERE rowid IN ({marks})",
            (vector_blob(query), *chunk_ids))
        return {chunk_id: similarity(distance) for chunk_id, distance in rows}
