"""Ranking metrics at a cut-off, as BEIR computes them with pytrec_eval.

nDCG uses linear gain (the graded relevance itself) and a log2(rank + 1) discount; the ideal
ordering is all of the query's relevant documents by grade. Recall is the share of the query's
relevant documents in the top k; MRR the reciprocal rank of the first relevant one (0 if none).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranked[:k], 1))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, 1))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    wanted = {doc for doc, g in relevant.items() if g > 0}
    if not wanted:
        return 0.0
    return len(wanted & set(ranked[:k])) / len(wanted)


def mrr_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    for rank, doc in enumerate(ranked[:k], 1):
        if relevant.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def pool_recall(pool: set[str], relevant: Mapping[str, int]) -> float:
    """Share of relevant documents anywhere in the candidate pool: the ceiling for any re-ordering."""
    wanted = {doc for doc, g in relevant.items() if g > 0}
    return len(wanted & pool) / len(wanted) if wanted else 0.0


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
