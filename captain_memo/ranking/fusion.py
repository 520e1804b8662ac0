"""Fusion: one score per candidate from the two legs' scores."""

from __future__ import annotations

from captain_memo.config import RankConfig
from captain_memo.ranking.candidates import Candidate
from captain_memo.ranking.query import QueryShape


def min_max(values: dict[int, float]) -> dict[int, float]:
    """Scale onto [0, 1], best 1.0; when all are tied, all are 1.0."""
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if high - low <= 1e-12:
        return {key: 1.0 for key in values}
    return {key: (value - low) / (high - low) for key, value in values.items()}


def weighted(candidates: list[Candidate], cfg: RankConfig) -> list[Candidate]:
    """v2: ``w_v × vector + w_k × keyword`` where both legs found the chunk; a chunk found by one
    leg keeps that leg's score at full weight, so it is not punished for the other's blind spot."""
    out = []
    for c in candidates:
        if c.vector is not None and c.keyword is not None:
            fused = cfg.vector_weight * c.vector + cfg.keyword_weight * c.keyword
        else:
            fused = c.vector if c.vector is not None else (c.keyword or 0.0)
        out.append(c.fuse(fused))
    return out


def rrf(candidates: list[Candidate], cfg: RankConfig) -> list[Candidate]:
    """Reciprocal rank fusion (Cormack et al. 2009): sum of 1 / (k + rank) over the legs."""
    out = []
    for c in candidates:
        fused = sum(1.0 / (cfg.rrf_k + rank) for rank in (c.vector_rank, c.keyword_rank) if rank is not None)
        out.append(c.fuse(fused))
    return out


def union(candidates: list[Candidate], cfg: RankConfig, shape: QueryShape | None = None) -> list[Candidate]:
    """v3: both legs scored over the union of candidates, put on one scale, then blended.

    See ranking/v3.py for the scale and the weights.
    """
    from captain_memo.ranking.v3 import union_fuse

    return union_fuse(candidates, cfg, shape)


def fuse(candidates: list[Candidate], cfg: RankConfig, shape: QueryShape | None = None) -> list[Candidate]:
    if cfg.fusion_mode == "rrf":
        return rrf(candidates, cfg)
    if cfg.fusion_mode == "union":
        return union(candidates, cfg, shape)
    return weighted(candidates, cfg)
