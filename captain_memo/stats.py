"""Figures about what is stored that need the ranking's settings: the Tide lifecycle of observations."""

from __future__ import annotations

import time
from typing import Iterable

from captain_memo.config import rank_config
from captain_memo.ranking import lifecycle
from captain_memo.records import DAY


def tide_counts(observations: Iterable[tuple[float, float, float | None]], now: float | None = None) -> dict[str, int]:
    """Observations strengthening (S above its initial value), active, and dormant (buoyancy below
    the dormant line and unseen for longer than the dormant age); ``observations`` are
    (stability, created at, last surfaced) rows."""
    cfg = rank_config()
    now = time.time() if now is None else now
    counts = {"strengthening": 0, "active": 0, "dormant": 0}
    for stability, created, surfaced in observations:
        age = max(0.0, (now - (surfaced or created)) / DAY)
        if stability > cfg.tide_initial_stability:
            counts["strengthening"] += 1
        if lifecycle.buoyancy(age, stability, cfg) < cfg.tide_dormant_buoyancy and age > cfg.tide_dormant_days:
            counts["dormant"] += 1
        else:
            counts["active"] += 1
    return counts
