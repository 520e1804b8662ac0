"""A candidate is one chunk with its leg scores, fused score and the multipliers applied to it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from captain_memo.records import Memory


@dataclass(frozen=True)
class Factor:
    """One multiplier that changed a candidate's score, and why."""

    # identifier | rare_token | kind | rare_words | branch | superseded | recency | tide | touches | calibrated
    name: str
    value: float
    detail: str = ""


@dataclass(frozen=True)
class Candidate:
    chunk_id: int
    memory: Memory
    text: str
    vector: float | None = None  # similarity 1 - d²/4, absent when the vector leg did not score it
    keyword: float | None = None  # the keyword score the fusion used, on [0, 1] (ranking/pool.py, union.py)
    bm25: float | None = None  # raw bm25 relevance (negated bm25(): higher is better)
    vector_rank: int | None = None  # 1-based rank in the vector leg's own list
    keyword_rank: int | None = None
    # The vector leg's weight when the fusion weighed this chunk apart as source code (ranking/union.py).
    code_vector_weight: float | None = None
    # The kind the keyword score was scaled among ("curated text", "observations") when curated text's
    # bm25 has statistics of its own (ranking/union.py); None when every candidate shares one scale.
    keyword_among: str | None = None
    fused: float = 0.0
    score: float = 0.0
    factors: tuple[Factor, ...] = ()
    # Ranks before every score: a change touching what a change question asks about carries its
    # date here, so those come first, newest first (ranking/changes.py); 0 for everything else.
    precedence: float = 0.0

    @property
    def key(self) -> tuple[str, int]:
        """What tells candidates apart when two stores are searched: chunk ids are per store."""
        return self.memory.store, self.chunk_id

    def fuse(self, fused: float) -> Candidate:
        return replace(self, fused=fused, score=fused, factors=(), precedence=0.0)

    def times(self, name: str, value: float, detail: str = "") -> Candidate:
        """This candidate with one more multiplier recorded in its trace."""
        return replace(self, score=self.score * value, factors=self.factors + (Factor(name, value, detail),))

    def factor(self, name: str) -> float:
        value = 1.0
        for f in self.factors:
            if f.name == name:
                value *= f.value
        return value


def by_score(candidates: list[Candidate]) -> list[Candidate]:
    """Best first: by precedence (changes touching a change question's topic, newest first), then by
    score; ties broken by fused score, then by store and chunk id for a stable order."""
    return sorted(candidates, key=lambda c: (-c.precedence, -c.score, -c.fused, c.key))
