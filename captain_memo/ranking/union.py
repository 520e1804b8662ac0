"""Union fusion (the v3 profile): both legs scored over the union, put on one scale, then weighted.

Why (measured on the public sets, doc/benchmarks.md). In v2 a chunk found by one leg keeps that
leg's score at full weight, but the keyword leg's min-max gives its best hit 1.0 while vector
similarities sit in a narrow 0.7-0.9 band: one-leg hits outrank chunks both legs agree on, and v2
loses to the better single leg on every set. Here:

1. every candidate gets both scores (the engine's union scoring): the exact vector similarity of
   keyword-only hits and the bm25 of vector-only hits, 0 where a chunk holds no query term. A
   chunk is judged by both indexes, never punished for one index's cut-off;
2. each leg is min-max scaled over that same union, so on both legs 1.0 means "best candidate
   here" and 0 "worst candidate here": the two scores are on one scale;
3. the two are weighted equally (w_v = w_k = 0.5, the profile's vector_weight and keyword_weight):
   with both legs on one scale, no leg is trusted more a priori. Exact identifiers are the
   identifier boost's job, after fusion.

Equal weights were chosen on that principle, then measured: on scifact and pytest_changelog the
best weight lies at 0.4-0.5 for plain and identifier queries alike; leaning on the keyword leg for
code-shaped queries (``shape_weighting``) did not help there and is off in v3. Plain English put
to source code wants ~0.85 on the vector leg; no feature of the query tells those queries apart,
but the chunk does: a chunk of source code is weighed apart (``code_weights``; doc/eval.md).
"""

from __future__ import annotations

from dataclasses import replace

from captain_memo.config import RankConfig
from captain_memo.ranking.candidates import Candidate
from captain_memo.ranking.content import is_source_code
from captain_memo.ranking.coverage import asks_about_change
from captain_memo.ranking.pool import min_max
from captain_memo.ranking.query import QueryShape

# With shape_weighting on: the keyword leg's weight for a query holding a code-shaped token.
IDENTIFIER_KEYWORD_WEIGHT = 0.6
# Calibration. Min-max says where a score stands among the others, which means nothing in a pool of
# one or two: there a lone candidate is "best" whatever it is. Below FULL_POOL candidates each leg's
# score is a blend: min-max weighted (n - 1) / (FULL_POOL - 1), the score on its own scale the rest.
# Own scales: cosine similarity from COSINE_NONE (unrelated texts of MiniLM sit at 0-0.15) to
# COSINE_FULL (a paraphrase); bm25 saturating as bm25 / (bm25 + BM25_HALF). Every pool of the eval
# sets holds 25+ candidates, so their figures do not move (doc/benchmarks.md).
FULL_POOL = 10
COSINE_NONE, COSINE_FULL = 0.15, 0.75
BM25_HALF = 2.0
# FTS5 floors a term's IDF at 1e-6 when half the documents or more hold it, so in a store of a few
# documents every bm25 is about 1e-6 whatever the match (2 documents, the term in 1: log(1.5/1.5) = 0).
# Below this the raw score says nothing, and the keyword leg's own judgement is whether the chunk
# holds the query's terms at all: its score in the pool.
BM25_FLOORED = 1e-3
# What a keyword score was scaled among (``kinds_apart``), by observation or not: shown beside the
# score in the trace, not as a multiplier (it multiplies nothing).
KIND_SCALES = {False: "curated text", True: "observations"}


def leg_weights(cfg: RankConfig, shape: QueryShape | None) -> tuple[float, float]:
    """(w_v, w_k), summing to 1."""
    if cfg.shape_weighting and shape is not None and shape.has_identifier:
        return 1.0 - IDENTIFIER_KEYWORD_WEIGHT, IDENTIFIER_KEYWORD_WEIGHT
    total = cfg.vector_weight + cfg.keyword_weight
    if total <= 0:
        return 0.5, 0.5
    return cfg.vector_weight / total, cfg.keyword_weight / total


def code_weights(
    cfg: RankConfig, shape: QueryShape | None, text: str, usual: tuple[float, float]
) -> tuple[float, float] | None:
    """(w_v, w_k) for a chunk of source code, or None when it is weighed like any other chunk.

    Plain words put to source code match it by accident (ranking/content.py), so there the vector
    leg leads: most of the keyword leg's half of the score is made of the vector leg's opinion
    instead, and never less of it than the usual weights give. The score stays on the same 0-1
    scale as a prose chunk's, so code that both legs rank first still scores 1. A query that is only
    names asks for the exact string: every chunk keeps the usual weights, and the identifier boosts
    do the rest."""
    if cfg.code_vector_weight <= 0 or (shape is not None and shape.identifier_only) or not is_source_code(text):
        return None
    w_vector = max(cfg.code_vector_weight, usual[0])
    return w_vector, 1.0 - w_vector


def union_fuse(candidates: list[Candidate], cfg: RankConfig, shape: QueryShape | None) -> list[Candidate]:
    """``w_v × minmax(vector) + w_k × minmax(bm25)`` over the union; with one leg, that leg's order.
    In a small pool, each leg's score leans on its own scale too (``calibrated``)."""
    vec = min_max({c.key: c.vector for c in candidates if c.vector is not None})
    bm25 = {c.key: (c.bm25 or 0.0) for c in candidates}
    # No candidate holds a query word: no keyword evidence, not "all tied for best".
    kinds = kinds_apart(candidates, cfg, shape)
    parts = kinds.values() if kinds else [bm25]
    kw = {key: score for part in parts for key, score in keyword_scaled(part).items()}
    usual = leg_weights(cfg, shape)
    keyword_answered = any(c.bm25 is not None for c in candidates)
    out = _fused(candidates, cfg, shape, vec, kw, usual, keyword_answered)
    if kinds and keyword_answered:
        out = [replace(c, keyword_among=KIND_SCALES[c.memory.kind == "observation"]) for c in out]
    return calibrated(out, cfg, shape, usual, keyword_answered) if cfg.calibrated_scores else out


def keyword_scaled(bm25: dict) -> dict:
    """bm25 min-max scaled; all 0 when nothing holds a query word (no evidence, not a tie for best)."""
    return min_max(bm25) if any(value > 0 for value in bm25.values()) else dict.fromkeys(bm25, 0.0)


def kinds_apart(candidates: list[Candidate], cfg: RankConfig, shape: QueryShape | None) -> dict[bool, dict]:
    """Each kind's bm25 (observation or not -> key -> bm25) when the keyword leg is scaled per kind,
    else {}.

    With ``curated_statistics`` a curated chunk's bm25 comes from curated text's statistics and an
    observation's from the whole index's: two scales. On a question not about a change, where the
    kind prior weighs the kinds apart anyway, each is min-max scaled among its own kind, so the best
    doc for ``url_for`` scores 1 beside the commits naming it (bm25 5.9 against their 11.4 put it
    4th, out of the top 3). A question about a change weighs commits and docs alike, on one scale:
    scaled apart there, change questions' nDCG@10 on Flask's store was 0.805 against 0.874."""
    if not cfg.curated_statistics or not cfg.pool_per_kind or shape is None or asks_about_change(shape):
        return {}
    kinds: dict[bool, dict] = {}
    for c in candidates:
        kinds.setdefault(c.memory.kind == "observation", {})[c.key] = c.bm25 or 0.0
    return kinds if len(kinds) > 1 else {}


def _fused(candidates, cfg, shape, vec, kw, usual, keyword_answered) -> list[Candidate]:
    has_vector = bool(vec)
    # When no candidate holds a query word, min-max gives every keyword score 1.0: there is no
    # keyword evidence to weigh apart, and doing so would put code under prose the vector leg ranks lower.
    keyword_tells = keyword_answered and len(set(kw.values())) > 1
    out = []
    for c in candidates:
        # The explanation shows the keyword score this fusion used: scaled over the whole union.
        c = replace(c, keyword=kw.get(c.key, 0.0) if keyword_answered else None)
        if not has_vector:
            out.append(c.fuse(kw.get(c.key, 0.0)))
            continue
        code = code_weights(cfg, shape, c.text, usual) if keyword_tells else None
        if code is not None:
            c = replace(c, code_vector_weight=code[0])
        w_vector, w_keyword = code or usual
        if not keyword_answered:  # the keyword leg did not answer: the vector leg's score alone
            w_vector, w_keyword = 1.0, 0.0
        out.append(c.fuse(w_vector * vec.get(c.key, 0.0) + w_keyword * kw.get(c.key, 0.0)))
    return out


def own_vector(similarity: float | None) -> float:
    """A similarity (1 - d²/4 = (1 + cos) / 2) on its own scale: 0 unrelated, 1 a paraphrase."""
    if similarity is None:
        return 0.0
    cosine = 2.0 * similarity - 1.0
    return min(1.0, max(0.0, (cosine - COSINE_NONE) / (COSINE_FULL - COSINE_NONE)))


def own_keyword(bm25: float | None, in_pool: float) -> float:
    """A bm25 on its own scale; ``in_pool`` (the candidate's keyword score in the pool) when FTS5's
    IDF floor left the bm25 meaningless (BM25_FLOORED)."""
    if not bm25 or bm25 <= 0:
        return 0.0
    return in_pool if bm25 < BM25_FLOORED else bm25 / (bm25 + BM25_HALF)


def calibrated(
    candidates: list[Candidate], cfg: RankConfig, shape: QueryShape | None, usual, keyword_answered: bool
) -> list[Candidate]:
    """In a pool under FULL_POOL, each fused score times what its legs' own scales make of it; the
    factor's detail says why (explain)."""
    n = len(candidates)
    if n >= FULL_POOL or n == 0:
        return candidates
    trust = (n - 1) / (FULL_POOL - 1)
    has_vector = any(c.vector is not None for c in candidates)
    out = []
    for c in candidates:
        w_vector, w_keyword = (c.code_vector_weight, 1 - c.code_vector_weight) if c.code_vector_weight else usual
        if not keyword_answered:
            w_vector, w_keyword = 1.0, 0.0
        elif not has_vector:
            w_vector, w_keyword = 0.0, 1.0
        keyword = own_keyword(c.bm25, c.keyword or 0.0)
        own = w_vector * own_vector(c.vector) + w_keyword * keyword
        target = trust * c.fused + (1 - trust) * own
        why = (
            f"a pool of {n}: min-max alone reads {c.fused:.3f}; on their own scales the legs give {own:.3f}"
            f" (vector {own_vector(c.vector):.2f}, keyword {keyword:.2f}), weighed {1 - trust:.0%}"
        )
        if c.fused > 0:
            out.append(c.times("calibrated", target / c.fused, why))
        else:
            out.append(c.fuse(target).times("calibrated", 1.0, why))
    return out
