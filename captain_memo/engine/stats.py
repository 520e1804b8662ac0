"""Figures about what is stored that need the ranking's settings: the Tide lifecycle of observations."""

from __future__ import annotations

import time
from collections.abc import Iterable

from captain_memo.config import rank_config
from captain_memo.ranking import lifecycle
from captain_memo.records import Memory

# "Strengthening" means S at least 1% above its initial value: under spaced repetition a lookup
# seconds after the last adds a few millionths, which is no strengthening.
STRENGTHENING = 1.01


def tide_counts(observations: Iterable[Memory], now: float | None = None) -> dict[str, int]:
    """Observations strengthening, active, and dormant (buoyancy below the dormant line and unused
    for longer than the dormant age, by the ranking's own rule)."""
    cfg = rank_config()
    now = time.time() if now is None else now
    counts = {"strengthening": 0, "active": 0, "dormant": 0}
    for memory in observations:
        if memory.stability >= STRENGTHENING * cfg.tide_initial_stability:
            counts["strengthening"] += 1
        counts["dormant" if lifecycle.is_dormant(memory, now, cfg) else "active"] += 1
    return counts
