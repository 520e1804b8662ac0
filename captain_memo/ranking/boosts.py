"""Query-aware boosts: multiplicative, each recorded on the candidate it changed, none removes one."""

from __future__ import annotations

import re

from captain_memo.config import RankConfig
from captain_memo.ranking.candidates import Candidate
from captain_memo.ranking.query import QueryShape, holds_name


def identifier_multiplier(shape: QueryShape, text: str, cfg: RankConfig) -> tuple[float, list[str]]:
    """``min(1 + step × matches, cap)``; a match is a code-shaped query token found whole and
    case-sensitively in the chunk (query.holds_name; a token repeated in the query counts each
    time). A query that is only names (``identifier_only``) gives a chunk holding all of them at
    least ``identifier_only_weight``."""
    matched = [token for token in shape.identifiers if holds_name(text, token)]
    value = min(1.0 + cfg.identifier_boost_step * len(matched), cfg.identifier_boost_cap)
    if shape.identifier_only and len(matched) == len(shape.identifiers):
        value = max(value, cfg.identifier_only_weight)
    return value, matched


def identifier(candidates: list[Candidate], shape: QueryShape, cfg: RankConfig) -> list[Candidate]:
    if not cfg.identifier_boost or not shape.identifiers:
        return candidates
    out = []
    for c in candidates:
        value, matched = identifier_multiplier(shape, c.text, cfg)
        out.append(c.times("identifier", value, ", ".join(dict.fromkeys(matched))) if matched else c)
    return out


def rare_token(candidates: list[Candidate], shape: QueryShape, cfg: RankConfig) -> list[Candidate]:
    """A plain query word of 4+ characters (not a stopword) in the chunk: ×weight, once per chunk."""
    if not cfg.rare_token_boost or not shape.rare_words:
        return candidates
    patterns = [(word, re.compile(r"\b" + re.escape(word) + r"\b", re.IGNORECASE)) for word in shape.rare_words]
    out = []
    for c in candidates:
        found = [word for word, pattern in patterns if pattern.search(c.text)]
        out.append(c.times("rare_token", cfg.rare_token_weight, ", ".join(found)) if found else c)
    return out


def branch(candidates: list[Candidate], current_branch: str | None, cfg: RankConfig) -> list[Candidate]:
    if not cfg.branch_boost or not current_branch:
        return candidates
    return [
        c.times("branch", cfg.branch_weight, current_branch) if c.memory.branch == current_branch else c
        for c in candidates
    ]


def superseded(candidates: list[Candidate], cfg: RankConfig) -> list[Candidate]:
    """Demoted, never dropped: an old fact is still the right answer to a question about the past."""
    if cfg.supersede_penalty == 1.0:
        return candidates
    return [
        c.times("superseded", cfg.supersede_penalty, f"by #{c.memory.superseded_ref}")
        if c.memory.superseded_ref is not None
        else c
        for c in candidates
    ]


def apply_boosts(
    candidates: list[Candidate], shape: QueryShape, current_branch: str | None, cfg: RankConfig
) -> list[Candidate]:
    candidates = identifier(candidates, shape, cfg)
    candidates = rare_token(candidates, shape, cfg)
    candidates = branch(candidates, current_branch, cfg)
    return superseded(candidates, cfg)
