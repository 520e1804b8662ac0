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
from captain_memo.ranking.pool import min_max
from captain_memo.ranking.query import QueryShape

# With shape_weighting on: the keyword leg's weight for a query holding a code-shaped token.
IDENTIFIER_KEYWORD_WEIGHT = 0.6


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
    """``w_v × minmax(vector) + w_k × minmax(bm25)`` over the union; with one leg, that leg's order."""
    vec = min_max({c.key: c.vector for c in candidates if c.vector is not None})
    kw = min_max({c.key: (c.bm25 or 0.0) for c in candidates})
    usual = leg_weights(cfg, shape)
    has_vector = bool(vec)
    keyword_answered = any(c.bm25 is not None for c in candidates)
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
        out.append(c.fuse(w_vector * vec.get(c.key, 0.0) + w_keyword * kw.get(c.key, 0.0)))
    return out
