"""The two search legs over a store, both scoped inside the search.

Scope is the caller's project plus personal notes (project NULL), applied in the query itself:
filtering a global top 25 afterwards would starve small projects. The keyword searches are the
store's own (``MemoryStore``: FTS5 in store/keyword.py, its bm25 on PostgreSQL in
store/postgres/keyword.py); this module holds what is the same for both: which phrases to search,
the similarity of two vectors, and the local store's exact vector index.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from captain_memo.errors import StoreError
from captain_memo.store.db import vector_blob
from captain_memo.store.protocol import Scope, VectorIndex

if TYPE_CHECKING:
    from captain_memo.store.db import Database
    from captain_memo.store.protocol import MemoryStore

__all__ = [
    "MAX_K",
    "Scope",
    "SqliteVecIndex",
    "VectorIndex",
    "default_index",
    "keyword_leg",
    "keyword_scores",
    "newest_matching",
    "selective_match",
    "similarity",
]
log = logging.getLogger("captain_memo")


# With ``per_kind`` (v3) the keyword leg keeps its top k of curated text (notes, skills, doc
# sections) and its top k of observations (commits, captures) apart, both taken from the best
# PER_KIND_DEPTH x k of the ranking. Commit messages are short and dense with a change's words: in
# Flask's store (343 doc sections beside 3,806 commits) they held up to 21 of the 25 places on a
# names question, and `url_for`'s API entry entered the pool only as the 11th curated hit. Kept
# apart, nDCG@10 of its 62 questions went 0.805 -> 0.816 (names 0.859 -> 0.881, changes 0.783 ->
# 0.806); the ranking scanned to any depth gave 0.815, so four times k is as good and bounded.
PER_KIND_DEPTH = 4


# With ``curated_statistics`` as well (v3), curated chunks are taken and scored from an index of
# curated text alone (store/keyword.py), so their bm25 weighs the query's words by how rare they
# are in curated text, not in a history beside it. In Flask's store the commits' vocabulary gave
# "factory" and "config" more idf than the docs alone give them, and "create the app inside a
# function so tests can pass their own config" found its answer 4th where the docs alone put it
# 3rd. Observations keep the whole index's statistics: they are most of a store that holds a
# history (3,806 of 4,149 memories there), and an index of their own gave change questions 0.829
# nDCG@10 against 0.874 (doc/eval.md, "The whole-store set").


def keyword_leg(
    store: MemoryStore,
    match: str | None,
    scope: Scope,
    k: int,
    per_kind: bool = False,
    curated_statistics: bool = False,
) -> dict[int, float]:
    """bm25 top k in scope: chunk id -> relevance (negated, so higher is better); with
    ``per_kind``, the top k of curated chunks and the top k of observations; with
    ``curated_statistics`` too, the curated ones scored by curated text's statistics when the store
    keeps them (``MemoryStore.curated_keyword_leg``)."""
    if match is None:
        return {}
    if not per_kind:
        return store.keyword_leg(match, scope, k)
    ranked = store.keyword_leg(match, scope, k * PER_KIND_DEPTH)
    observed = store.observation_chunks(list(ranked))
    own = store.curated_keyword_leg(match, scope, k) if curated_statistics else None
    if own is not None:
        ranked = {chunk_id: relevance for chunk_id, relevance in ranked.items() if chunk_id in observed}
    kept: dict[int, float] = {}
    taken = {True: 0, False: 0}  # chunks kept of each kind: observation or not
    for chunk_id, relevance in sorted(ranked.items(), key=lambda hit: -hit[1]):
        kind = chunk_id in observed
        if taken[kind] < k:
            taken[kind] += 1
            kept[chunk_id] = relevance
    return {**kept, **(own or {})}


# A phrase found in more chunks than this is left out of the keyword query when the query has a
# rarer one. FTS5 computes bm25 for every matching row before it picks the best (~3 µs a row; it
# has no top-k pruning), and the idf of each phrase needs a pass over all its rows: at 150,000
# chunks a query holding "the" and "error" matched 148,000 rows and took 700-850 ms, against
# ~10 ms with those two left out. Up to 10,000 chunks only phrases in more than half of them go,
# and FTS5 gives those an idf of 1e-6 anyway; above that, a phrase dropped has an idf below
# log(chunks / 5,000) while the phrases kept score higher.
COMMON_PHRASE_FLOOR = 5_000
COMMON_PHRASE_SHARE = 0.01


def selective_match(store: MemoryStore, match: str | None, stopwords: frozenset[str]) -> str | None:
    """``match`` (an OR of quoted phrases from ``fts_match``) without its too common phrases;
    ``stopwords`` are never chosen as the one phrase kept when every phrase is common."""
    if match is None:
        return None
    chunks = store.chunk_estimate()
    limit = max(COMMON_PHRASE_FLOOR, int(COMMON_PHRASE_SHARE * chunks))
    phrases = match.split(" OR ")  # phrases are quoted lower-case words: no " OR " inside one
    if chunks <= limit or len(phrases) < 2:
        return match
    kept = [phrase for phrase in phrases if store.phrase_rows_up_to(phrase, limit + 1) <= limit]
    if kept:
        return " OR ".join(kept)
    # Every phrase is common: search the rarest one that is not a stopword. Keeping them all cost
    # 100-400 ms at a million chunks (325,000 matching rows for "fix the gakibu felmoqua ... test").
    rarest, fewest = None, 8 * limit + 1
    for phrase in phrases:
        if phrase.strip('"') not in stopwords:
            rows = store.phrase_rows_up_to(phrase, fewest)
            if rows < fewest:
                rarest, fewest = phrase, rows
    return rarest or match


def keyword_scores(
    store: MemoryStore, match: str | None, chunk_ids: Sequence[int], curated_statistics: bool = False
) -> dict[int, float]:
    """bm25 relevance of given chunks (those that do not match at all are left out).

    bm25 here is computed with the same statistics as the keyword leg: the whole index's, or with
    ``curated_statistics`` curated text's own for curated chunks (when the store keeps them).
    """
    if match is None or not chunk_ids:
        return {}
    scores = store.keyword_scores(match, chunk_ids)
    own = store.curated_keyword_scores(match, chunk_ids) if curated_statistics else None
    return {**scores, **own} if own else scores  # a curated chunk that matches matches in both indexes


def similarity(squared_distance: float) -> float:
    """Similarity of unit vectors from their squared L2 distance d²: 1 - d²/4, so 1 identical,
    0.5 orthogonal, 0 opposite (clamped to [0, 1] against rounding)."""
    return max(0.0, min(1.0, 1.0 - float(squared_distance) / 4.0))


# sqlite-vec answers at most this many nearest neighbours per query (SQLITE_VEC_VEC0_K_MAX in 0.1).
MAX_K = 4096


def default_index(store: MemoryStore) -> VectorIndex:
    """The exact vector index of a store: sqlite-vec for the local one, pgvector for the team's."""
    return store.exact_index()


class SqliteVecIndex:
    """Exact KNN with sqlite-vec, one query per partition in scope."""

    def __init__(self, store: Database):
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


def newest_matching(store: MemoryStore, topic: tuple[str | None, str | None], scope: Scope, k: int) -> list[int]:
    """Chunk ids of the ``k`` newest observations in scope matching a temporal query's topic: those
    holding every topic word, then (when fewer than k do) any of them. Newest by the memory's date;
    the first chunk of each memory stands for it.

    The bm25 leg ranks by wording, so for "latest change to capture" the newest commit that touched
    capture.py can sit far below the top 25 (seen at #50+ in a history of 5,000 commits); this list
    puts it in the pool for recency to reorder.
    """
    return store.newest_matching(topic, scope, k)
