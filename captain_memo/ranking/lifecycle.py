"""Time: recency when the query asks for it, and Tide, the lifecycle of casual observations.

Curated memories and skills are anchored (×1) by both: a decision does not fade because nobody
looked at it this month. Only observations move.

Tide has two rules (``tide_rule``):

- ``seed`` (v2, the seed design): the clock counts from the last time a memory was listed, or from
  its own date; every listing restarts it and strengthens S in full; an observation opened once is
  never demoted again.
- ``use`` (v3): Tide measures use, not display. The clock counts from when the memory entered the
  store (or its text was last rewritten) or was last opened, never from a commit's date, so a
  history indexed today is not dormant. Every surfacing strengthens S by
  ``gain × spacing``, where ``spacing = min(1, days since the last strengthening / S)``: evidence
  counts in full once a whole stability period has passed since the last, so ten lookups in ten
  minutes count about as much as one (spaced repetition). Being listed is weak evidence (gain 0.2
  for a search, 0.1 for an automatic lookup) and never moves the clock: a listed memory floats up
  only as fast as its S grows. Opening it (``show``, the editor's <CR>) is strong evidence (1.5)
  and restarts the clock: opening lifts a memory on its next recall.
"""

from __future__ import annotations

from captain_memo.config import STABILITY, RankConfig
from captain_memo.ranking.candidates import Candidate, by_score
from captain_memo.store.models import Memory

DAY = 86400.0
MIN_STABILITY = STABILITY.low  # days: the lowest CAPTAIN_MEMO_TIDE_*_STABILITY accepts


def recency_factor(age_days: float | None, cfg: RankConfig, half_life: float | None = None) -> float:
    """``floor + (1 - floor) × 0.5^(age / half_life)``; no date, a future date or a half-life of
    0 (no decay): 1."""
    half_life = cfg.temporal_half_life_days if half_life is None else half_life
    if age_days is None or age_days < 0 or half_life <= 0:
        return 1.0
    return cfg.temporal_floor + (1.0 - cfg.temporal_floor) * 0.5 ** (age_days / half_life)


def recency_half_life(head: list[Candidate], anchor: float, cfg: RankConfig) -> float:
    """The half-life, at most ``recency_span_share`` of the time the head's dated observations span.

    A repository's commits may lie hours apart (a burst of work) or months apart (a mature project);
    a fixed 21 days tells nothing apart in the first. Measured on this project's history (81 commits
    in two hours): the newest commit of a module reached the top 3 for 74% of modules with the fixed
    half-life and 83% with a third of the span; on a generated history of 320 commits over 15 months
    both gave 95% (doc/benchmarks.md).
    """
    half_life = cfg.temporal_half_life_days
    if cfg.recency_span_share <= 0 or half_life <= 0:
        return half_life
    dated = [c.memory.created_at for c in head if c.memory.kind == "observation" and c.memory.created_at]
    span = (anchor - min(dated, default=anchor)) / DAY
    return min(half_life, cfg.recency_span_share * span) if span > 0 else half_life


def recency_anchor(head: list[Candidate], now: float, cfg: RankConfig) -> float:
    """The moment ages are counted from: now, or the newest dated observation among those recency
    reorders (the question is which of them is the latest, however long ago that was)."""
    if cfg.recency_anchor != "newest":
        return now
    dates = [c.memory.created_at for c in head
             if c.memory.kind == "observation" and c.memory.created_at and c.memory.created_at <= now]
    return max(dates, default=now)


def recency(candidates: list[Candidate], temporal: bool, now: float, cfg: RankConfig) -> list[Candidate]:
    """Only on temporal intent, only over the current top N of the pool, only observations."""
    if not cfg.temporal_intent or not temporal:
        return candidates
    ranked = by_score(candidates)
    head, tail = ranked[: cfg.temporal_top_n], ranked[cfg.temporal_top_n:]
    anchor = recency_anchor(head, now, cfg)
    since = "" if anchor == now else " than the newest match"
    half_life = recency_half_life(head, anchor, cfg)
    out = []
    for c in head:
        if c.memory.kind != "observation":
            out.append(c)
            continue
        age = (anchor - c.memory.created_at) / DAY if c.memory.created_at else None
        factor = recency_factor(age, cfg, half_life)
        out.append(c.times("recency", factor, f"{span_text(age)} old{'er' + since if since else ''}")
                   if factor != 1.0 else c)
    return out + tail


def span_text(days: float) -> str:
    """An age for the trace: hours under a day (commits of one afternoon differ by hours)."""
    return f"{days * 24:.0f}h" if days < 1 else f"{days:.0f}d"


# -- Tide ---------------------------------------------------------------------------------------

def buoyancy(age_days: float, stability: float, cfg: RankConfig) -> float:
    """``1 / (1 + a × age / S)``; a stored S of 0 or less (never written by a valid setting) reads
    as a fresh memory (1), not as one sunk to the floor."""
    if stability <= 0:
        return 1.0
    return 1.0 / (1.0 + cfg.tide_age_weight * max(age_days, 0.0) / stability)


def tide_multiplier(age_days: float, stability: float, cfg: RankConfig) -> float:
    """``floor + (1 - floor) × buoyancy``: in [floor, 1]."""
    return cfg.tide_floor + (1.0 - cfg.tide_floor) * buoyancy(age_days, stability, cfg)


def strengthened(stability: float, gain: float, cfg: RankConfig) -> float:
    """Stability after a surfacing with gain g: ``min(cap, S × (1 + growth × g × cap / (cap + S)))``,
    never below MIN_STABILITY: S only ever grows by a factor. An S of 0 or less (written by versions
    that accepted a cap or an initial value of 0) reads as fresh, so it starts again from the
    initial stability."""
    cap = max(cfg.tide_max_stability, MIN_STABILITY)
    if stability <= 0:
        stability = cfg.tide_initial_stability
    stability = max(stability, MIN_STABILITY)
    return min(cap, stability * (1.0 + cfg.tide_growth * gain * cap / (cap + stability)))


def clock_start(memory: Memory, cfg: RankConfig) -> float:
    """When the memory's Tide clock started (see the module's docstring for the two rules)."""
    if cfg.tide_rule == "use":
        return max(memory.updated_at or memory.created_at, memory.last_opened or 0.0)
    return memory.last_surfaced or memory.created_at


def clock_event(memory: Memory, cfg: RankConfig) -> str:
    """What started the clock, for the trace."""
    if cfg.tide_rule != "use":
        return "unseen"
    return "since opened" if (memory.last_opened or 0.0) >= (memory.updated_at or memory.created_at) else "since stored"


def unused_days(memory: Memory, now: float, cfg: RankConfig) -> float:
    return max(0.0, (now - clock_start(memory, cfg)) / DAY)


def spacing(memory: Memory, now: float, cfg: RankConfig) -> float:
    """``min(1, days since the last strengthening / S)``: 1 under the seed rule."""
    if cfg.tide_rule != "use" or memory.stability <= 0:
        return 1.0
    last = max(memory.last_surfaced or 0.0, memory.updated_at or memory.created_at)
    return min(1.0, max(0.0, (now - last) / DAY) / memory.stability)


def reinforced(memory: Memory, gain: float, now: float, cfg: RankConfig) -> float:
    """The memory's stability after a surfacing with this gain, now."""
    return strengthened(memory.stability, gain * spacing(memory, now, cfg), cfg)


def exempt(memory: Memory, cfg: RankConfig) -> bool:
    """Never moved by Tide: curated memory and skills; under the seed rule, an observation opened once."""
    return memory.kind != "observation" or (cfg.tide_rule == "seed" and memory.opened_in_full)


def tide_value(memory: Memory, now: float, cfg: RankConfig) -> tuple[float, float] | None:
    """(multiplier, days unused) for a memory Tide moves; None for one it never moves."""
    if not cfg.tide or exempt(memory, cfg):
        return None
    age = unused_days(memory, now, cfg)
    return tide_multiplier(age, memory.stability, cfg), age


def tide(candidates: list[Candidate], now: float, cfg: RankConfig) -> list[Candidate]:
    """Over the whole post-boost pool, before the cut: a fading observation that is the only exact
    answer is demoted, never lost."""
    if not cfg.tide:
        return candidates
    out = []
    for c in candidates:
        found = tide_value(c.memory, now, cfg)
        if found is None or found[0] == 1.0:
            out.append(c)
            continue
        value, age = found
        out.append(c.times("tide", value, f"S={c.memory.stability:.1f}d, {age:.0f}d {clock_event(c.memory, cfg)}"))
    return out


def is_dormant(memory: Memory, now: float, cfg: RankConfig) -> bool:
    """``stats``: sunk below the dormant buoyancy and unused for longer than the dormant age, by the
    same rule and exemptions as the ranking's Tide."""
    if exempt(memory, cfg):
        return False
    age = unused_days(memory, now, cfg)
    return buoyancy(age, memory.stability, cfg) < cfg.tide_dormant_buoyancy and age > cfg.tide_dormant_days
