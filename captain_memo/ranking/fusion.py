"""Fusion: one score per candidate from the two legs' scores, by the profile's fusion mode.

Which fusion runs, and whether it wants both legs scored over the union of their candidates
first, is decided here alone (``fusion_for``); the engine asks, and the pipeline calls it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from captain_memo.config import RankConfig
from captain_memo.ranking.candidates import Candidate
from captain_memo.ranking.pool import min_max
from captain_memo.ranking.query import QueryShape
from captain_memo.ranking.union import union_fuse

__all__ = ["Fusion", "fuse", "fusion_for", "min_max", "rrf", "union_fuse", "weighted"]


def weighted(candidates: list[Candidate], cfg: RankConfig, shape: QueryShape | None = None) -> list[Candidate]:
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


def rrf(candidates: list[Candidate], cfg: RankConfig, shape: QueryShape | None = None) -> list[Candidate]:
    """Reciprocal rank fusion (Cormack et al. 2009): sum of 1 / (k + rank) over the legs."""
    out = []
    for c in candidates:
        fused = sum(1.0 / (cfg.rrf_k + rank) for rank in (c.vector_rank, c.keyword_rank) if rank is not None)
        out.append(c.fuse(fused))
    return out


@dataclass(frozen=True)
class Fusion:
    """A fusion, and whether it needs every candidate scored by both legs (the union) first; such
    a fusion also scales the keyword score itself, so the pool leaves it unscaled."""

    fuse: Callable[[list[Candidate], RankConfig, QueryShape | None], list[Candidate]]
    scores_union: bool = False


FUSIONS = {"weighted": Fusion(weighted), "rrf": Fusion(rrf), "union": Fusion(union_fuse, scores_union=True)}


def fusion_for(cfg: RankConfig) -> Fusion:
    """The profile's fusion (config.py refuses other modes; weighted is the fallback)."""
    return FUSIONS.get(cfg.fusion_mode, FUSIONS["weighted"])


def fuse(candidates: list[Candidate], cfg: RankConfig, shape: QueryShape | None = None) -> list[Candidate]:
    return fusion_for(cfg).fuse(candidates, cfg, shape)
