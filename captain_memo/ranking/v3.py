"""The v3 fusion: both legs scored over the union, put on a comparable scale, then blended.

Why (measured on the public sets, doc/benchmarks.md): in v2 the keyword leg's min-max puts its best
hit at 1.0 while vector similarities sit in a narrow 0.7-0.9 band, so one-leg hits outrank chunks
both legs agree on. Here every candidate gets both scores (exact vector similarity for keyword-only
hits, bm25 for vector-only hits, 0 where a chunk does not contain any query term), and each leg is
min-max scaled over the same union, so 1.0 means "best in this pool" on both legs.
"""

from __future__ import annotations

from captain_memo.config import RankConfig
from captain_memo.ranking.candidates import Candidate
from captain_memo.ranking.fusion import min_max
from captain_memo.ranking.query import QueryShape

# Code-shaped queries lean on the keyword leg, plain questions on the vector leg.
IDENTIFIER_KEYWORD_WEIGHT = 0.6


def leg_weights(cfg: RankConfig, shape: QueryShape | None) -> tuple[float, float]:
    if cfg.shape_weighting and shape is not None and shape.has_identifier:
        return 1.0 - IDENTIFIER_KEYWORD_WEIGHT, IDENTIFIER_KEYWORD_WEIGHT
    total = cfg.vector_weight + cfg.keyword_weight
    if total <= 0:
        return 0.5, 0.5
    return cfg.vector_weight / total, cfg.keyword_weight / total


def union_fuse(candidates: list[Candidate], cfg: RankConfig, shape: QueryShape | None) -> list[Candidate]:
    vec = min_max({c.chunk_id: c.vector for c in candidates if c.vector is not None})
    kw = min_max({c.chunk_id: (c.bm25 or 0.0) for c in candidates})
    w_vector, w_keyword = leg_weights(cfg, shape)
    has_vector = bool(vec)
    out = []
    for c in candidates:
        if has_vector:
            fused = w_vector * vec.get(c.chunk_id, 0.0) + w_keyword * kw.get(c.chunk_id, 0.0)
        else:
            fused = kw.get(c.chunk_id, 0.0)
        out.append(c.fuse(fused))
    return out
