"""The whole ranking, in order. Nothing is discarded before the last stage.

1. candidates from both legs (the engine runs them concurrently; ranking/pool.py builds the pool)
2. fusion: weighted (v2), rrf (legacy) or union (v3)
3. query-aware boosts: identifier, rare token, branch, superseded
4. recency, only on temporal intent, over the top N
5. Tide over the whole pool
6. the cut: best chunk per memory, then the top ``limit``
"""

from __future__ import annotations

from dataclasses import dataclass

from captain_memo.config import RankConfig
from captain_memo.ranking import boosts, lifecycle
from captain_memo.ranking.candidates import Candidate, by_score
from captain_memo.ranking.fusion import fuse
from captain_memo.ranking.query import QueryShape


@dataclass(frozen=True)
class RankRequest:
    shape: QueryShape
    branch: str | None
    now: float
    limit: int


def rank_pool(candidates: list[Candidate], req: RankRequest, cfg: RankConfig) -> list[Candidate]:
    """Stages 2-5: every candidate scored and traced, none removed, best first."""
    pool = fuse(candidates, cfg, req.shape)
    pool = boosts.apply_boosts(pool, req.shape, req.branch, cfg)
    pool = lifecycle.recency(pool, req.shape.temporal, req.now, cfg)
    pool = lifecycle.tide(pool, req.now, cfg)
    return by_score(pool)


def cut(pool: list[Candidate], limit: int) -> list[Candidate]:
    """The best chunk of each memory (ids are per store), then the top ``limit``."""
    seen: set[tuple[str, int]] = set()
    out = []
    for c in by_score(pool):
        key = (c.memory.store, c.memory.id)
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
        if len(out) >= limit:
            break
    return out
