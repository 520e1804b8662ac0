"""Time: recency when the query asks for it, and Tide, the lifecycle of casual observations.

Curated memories and skills are anchored (×1) by both: a decision does not fade because nobody
looked at it this month. Only observations move.
"""

from __future__ import annotations

from captain_memo.config import STABILITY, RankConfig
from captain_memo.ranking.candidates import Candidate, by_score

DAY = 86400.0
MIN_STABILITY = STABILITY.low  # days: the lowest CAPTAIN_MEMO_TIDE_*_STABILITY accepts


def recency_factor(age_days: float | None, cfg: RankConfig) -> float:
    """``floor + (1 - floor) × 0.5^(age / half_life)``; no date or a future date: 1."""
    if age_days is None or age_days < 0:
        return 1.0
    half_life = max(cfg.temporal_half_life_days, 1e-9)
    return cfg.temporal_floor + (1.0 - cfg.temporal_floor) * 0.5 ** (age_days / half_life)


def recency(candidates: list[Candidate], temporal: bool, now: float, cfg: RankConfig) -> list[Candidate]:
    """Only on temporal intent, only over the current top N of the pool, only observations."""
    if not cfg.temporal_intent or not temporal:
        return candidates
    ranked = by_score(candidates)
    head, tail = ranked[: cfg.temporal_top_n], ranked[cfg.temporal_top_n:]
    out = []
    for c in head:
        if c.memory.kind != "observation":
            out.append(c)
            continue
        age = (now - c.memory.created_at) / DAY if c.memory.created_at else None
        factor = recency_factor(age, cfg)
        out.append(c.times("recency", factor, f"{age:.0f}d old") if factor != 1.0 else c)
    return out + tail


def buoyancy(age_days: float, stability: float, cfg: RankConfig) -> float:
    return 1.0 / (1.0 + cfg.tide_age_weight * max(age_days, 0.0) / max(stability, 1e-9))


def tide_multiplier(age_days: float, stability: float, cfg: RankConfig) -> float:
    """``floor + (1 - floor) × buoyancy``: in [floor, 1]."""
    return cfg.tide_floor + (1.0 - cfg.tide_floor) * buoyancy(age_days, stability, cfg)


def strengthened(stability: float, gain: float, cfg: RankConfig) -> float:
    """Stability after a surfacing with gain g: ``min(cap, S × (1 + growth × g × cap / (cap + S)))``,
    never below MIN_STABILITY: S only ever grows by a factor, so a stability of 0 (written by
    versions that accepted a cap or an initial value of 0) would stay 0 under any settings."""
    cap = max(cfg.tide_max_stability, MIN_STABILITY)
    stability = max(stability, MIN_STABILITY)
    return min(cap, stability * (1.0 + cfg.tide_growth * gain * cap / (cap + stability)))


def surfaced_age_days(candidate: Candidate, now: float) -> float:
    last = candidate.memory.last_surfaced or candidate.memory.created_at
    return max(0.0, (now - last) / DAY)


def tide(candidates: list[Candidate], now: float, cfg: RankConfig) -> list[Candidate]:
    """Over the whole post-boost pool, before the cut: a fading observation that is the only exact
    answer is demoted, never lost."""
    if not cfg.tide:
        return candidates
    out = []
    for c in candidates:
        if c.memory.kind != "observation" or c.memory.opened_in_full:
            out.append(c)
            continue
        age = surfaced_age_days(c, now)
        value = tide_multiplier(age, c.memory.stability, cfg)
        out.append(c.times("tide", value, f"S={c.memory.stability:.1f}d, {age:.0f}d unseen") if value != 1.0 else c)
    return out
