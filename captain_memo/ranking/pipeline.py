"""The whole ranking, in order. Nothing is discarded before the last stage.

1. candidates from both legs (the engine runs them concurrently; ranking/pool.py builds the pool)
2. fusion: weighted (v2), rrf (legacy) or union (v3)
3. query-aware boosts: identifier, rare token, branch, superseded; then what kind of text
   answers (an observation weighed down on a question not about a change) and the rare words
   held together (ranking/coverage.py)
4. recency, only on temporal intent, over the top N
5. Tide over the whole pool
6. a change question: the changes touching its topic first, newest first; its window keeps the
   observations dated inside it (ranking/changes.py, window.py)
7. the cut: best chunk per memory, then the top ``limit``
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from captain_memo.config import RankConfig
from captain_memo.ranking import boosts, changes, coverage, lifecycle
from captain_memo.ranking.candidates import Candidate, by_score
from captain_memo.ranking.fusion import fuse
from captain_memo.ranking.query import QueryShape
from captain_memo.ranking.window import Window, inside


@dataclass(frozen=True)
class RankRequest:
    shape: QueryShape
    branch: str | None
    now: float
    limit: int
    # (store, memory id) -> what it touched, for the changes a change question asks about.
    touching: Mapping[tuple[str, int], str] = field(default_factory=dict)
    window: Window | None = None


def rank_pool(candidates: list[Candidate], req: RankRequest, cfg: RankConfig) -> list[Candidate]:
    """Stages 2-6: every candidate scored and traced, best first; only a window removes any (the
    observations dated outside it)."""
    pool = fuse(candidates, cfg, req.shape)
    pool = boosts.apply_boosts(pool, req.shape, req.branch, cfg)
    pool = coverage.kind_prior(pool, req.shape, cfg)
    pool = coverage.heading_words(pool, req.shape, cfg)
    pool = coverage.rare_words_floor(pool, req.shape, cfg)
    pool = lifecycle.recency(pool, req.shape.temporal, req.now, cfg)
    pool = lifecycle.tide(pool, req.now, cfg)
    pool = changes.changes_first(pool, req.touching)
    return by_score(inside(pool, req.window))


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
