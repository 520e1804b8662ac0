"""The candidate pool: every chunk either leg found, with its scores and its rank in each leg.

Stage 1 of the pipeline (ranking/pipeline.py). The keyword leg's bm25 is put on [0, 1] here by
min-max over the leg's hits, except when the fusion scales it itself over the union of both legs
(ranking/union.py): then ``keyword`` is left for that fusion to set, so it is scaled once.
"""

from __future__ import annotations

from collections.abc import Mapping

from captain_memo.ranking.candidates import Candidate
from captain_memo.records import Memory


def min_max(values: Mapping[int, float]) -> dict[int, float]:
    """Scale onto [0, 1], best 1.0; when all are tied, all are 1.0."""
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if high - low <= 1e-12:
        return {key: 1.0 for key in values}
    return {key: (value - low) / (high - low) for key, value in values.items()}


def leg_ranks(hits: Mapping[int, float]) -> dict[int, int]:
    """chunk id -> 1-based rank by score, best first."""
    return {chunk_id: i + 1 for i, chunk_id in enumerate(sorted(hits, key=lambda c: -hits[c]))}


def build_pool(
    vector_hits: Mapping[int, float],
    keyword_hits: Mapping[int, float] | None,
    rows: Mapping[int, tuple[str, Memory]],
    scale_keyword: bool = True,
) -> list[Candidate]:
    """One candidate per chunk in ``rows`` (text and memory of the chunks the legs found; a chunk
    deleted meanwhile is missing there and left out). ``vector_hits`` hold similarities,
    ``keyword_hits`` bm25 relevance (higher is better)."""
    keyword_hits = keyword_hits or {}
    scaled = min_max(keyword_hits) if scale_keyword else {}
    vector_rank, keyword_rank = leg_ranks(vector_hits), leg_ranks(keyword_hits)
    return [
        Candidate(
            chunk_id=cid,
            memory=memory,
            text=text,
            vector=vector_hits.get(cid),
            keyword=scaled.get(cid),
            bm25=keyword_hits.get(cid),
            vector_rank=vector_rank.get(cid),
            keyword_rank=keyword_rank.get(cid),
        )
        for cid, (text, memory) in rows.items()
    ]
