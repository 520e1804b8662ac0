"""What a recall returns: the hits with their traces, the profile, and which legs answered."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from captain_memo.ranking.candidates import Candidate
from captain_memo.records import DAY, json_id, json_superseded_by, source_json

LEGS = ("vector", "keyword")


@dataclass(frozen=True)
class RecallResult:
    query: str
    profile: str
    hits: tuple[Candidate, ...]
    legs: tuple[str, ...]  # the legs that answered
    failures: dict[str, str] = field(default_factory=dict)  # leg -> error message
    elapsed_ms: float = 0.0
    pool_size: int = 0
    stores: tuple[str, ...] = ("local",)  # the stores that answered: local, and team when one is set
    # What the answer was read against, for a question about time: its window and the date its
    # relative words were read against, or that the window was empty (engine/core.py, sources/change_plan.py).
    notice: str = ""
    # Names the query asks for that no memory holds whole: its hits are only closest by meaning.
    unnamed: tuple[str, ...] = ()

    @property
    def degraded(self) -> bool:
        """A leg or a store failed: the hits are what the rest found, and ``failures`` says what."""
        return len(self.legs) < len(LEGS) or bool(self.failures)


def _num(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


def hit_json(c: Candidate, rank: int, now: float) -> dict:
    m = c.memory
    return {
        "rank": rank,
        "id": json_id(m),
        "store": m.store,
        "chunk_id": c.chunk_id,
        "kind": m.kind,
        "title": m.display_title,
        "text": c.text,
        "score": _num(c.score),
        "created_at": m.created_at,
        "age_days": _num(max(0.0, (now - m.created_at) / DAY)),
        "project": m.project,
        "branch": m.branch,
        "source": source_json(m.source, label=True),
        "superseded_by": json_superseded_by(m),
        "explain": {
            "vector": _num(c.vector),
            "keyword": _num(c.keyword),
            "bm25": _num(c.bm25),
            "fused": _num(c.fused),
            "code_vector_weight": _num(c.code_vector_weight),
            "keyword_among": c.keyword_among,
            "factors": [{"name": f.name, "value": _num(f.value), "detail": f.detail} for f in c.factors],
            "product": _num(c.fused * math.prod(f.value for f in c.factors)),
        },
    }


def result_json(result: RecallResult, now: float) -> dict:
    """The stable JSON shape of a recall (documented in doc/json.md)."""
    return {
        "query": result.query,
        "profile": result.profile,
        "legs": list(result.legs),
        "failures": result.failures,
        "stores": list(result.stores),
        "elapsed_ms": round(result.elapsed_ms, 2),
        "pool_size": result.pool_size,
        "notice": result.notice,
        "unnamed": list(result.unnamed),
        "hits": [hit_json(c, i + 1, now) for i, c in enumerate(result.hits)],
    }
