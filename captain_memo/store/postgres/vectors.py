"""The team store's vector leg: pgvector, the same similarity ``1 - d²/4`` as the local store."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from captain_memo.store.postgres.keyword import scope_sql
from captain_memo.store.protocol import Scope
from captain_memo.store.search import similarity

# HNSW's candidate list per search (pgvector's hnsw.ef_search, default 40). With a project filter,
# pgvector 0.8's iterative scan keeps searching until k rows pass it, so a small project is not
# starved by a global top k (hnsw.iterative_scan = strict_order, set on every connection).
EF_SEARCH = 100


def vector_text(vector) -> str:
    """pgvector's text form; a float32 printed as a Python float reads back as the same float32."""
    return "[" + ",".join(repr(x) for x in np.asarray(vector, dtype=np.float32).tolist()) + "]"


class PgVectorIndex:
    """Nearest chunks with pgvector (``VectorIndex``): HNSW when the model is bound, else a scan."""

    def __init__(self, store):
        self.store = store

    def close(self) -> None:
        """Nothing of its own to release: it reads the store's connections."""

    def knn(self, query: np.ndarray, scope: Scope, k: int) -> dict[int, float]:
        """chunk id -> similarity for the k nearest chunks in scope."""
        if not self.store.has_vectors():
            return {}
        text = vector_text(query)
        params: list = [text]
        where = scope_sql(scope.project, scope.all_projects, params)
        params += [text, k]
        # Ordered by the operator itself, which is what lets the planner use the HNSW index.
        rows = self.store.fetch(
            f"SELECT id, embedding <-> %s::vector FROM chunks WHERE embedding IS NOT NULL AND {where}"
            " ORDER BY embedding <-> %s::vector LIMIT %s",
            params,
        )
        return {chunk_id: similarity(distance * distance) for chunk_id, distance in rows}

    def similarities(self, query: np.ndarray, chunk_ids: Sequence[int]) -> dict[int, float]:
        """Exact similarity of given chunks (chunks without a vector are left out)."""
        if not chunk_ids or not self.store.has_vectors():
            return {}
        rows = self.store.fetch(
            "SELECT id, embedding <-> %s::vector FROM chunks WHERE id = ANY(%s) AND embedding IS NOT NULL",
            (vector_text(query), list(chunk_ids)),
        )
        return {chunk_id: similarity(distance * distance) for chunk_id, distance in rows}
