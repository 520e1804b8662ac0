"""The team store's keyword leg: FTS5's bm25, computed in Postgres over FTS5's own tokens.

Postgres's ``ts_rank`` is not bm25, and its parser does not split text as FTS5's unicode61 does,
so each chunk keeps the token sequence FTS5 makes of it (terms.py) in ``chunks.terms`` (a GIN
index finds the chunks holding a token) and the score is FTS5's formula (fts5_aux.c,
fts5Bm25Function), phrase by phrase:

    idf(p)   = ln((N - n(p) + 0.5) / (n(p) + 0.5)), or 1e-6 when that is not positive
    score    = sum over p of idf(p) * f(p) * (k1 + 1) / (f(p) + k1 * (1 - b + b * D / avgdl))

with N the chunks the role can read, n(p) those holding phrase p, f(p) how often p occurs in the
chunk (at consecutive positions), D its token count and avgdl the mean token count; k1 = 1.2,
b = 0.75. Like FTS5, every matching chunk is scored before the best are taken.
"""

from __future__ import annotations

from collections.abc import Sequence

from captain_memo.store.postgres.terms import Match

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6  # FTS5's idf for a phrase in half the rows or more


def phrase_count(tokens: Sequence[str], params: list) -> str:
    """SQL for how often the phrase ``tokens`` occurs in chunk ``c`` (its parameters appended)."""
    if not tokens:
        return "0"
    params.append(tokens[0])
    if len(tokens) == 1:
        return "coalesce(cardinality(array_positions(c.terms, %s::text)), 0)"
    params.append(list(tokens))
    return (
        "(SELECT count(*) FROM unnest(array_positions(c.terms, %s::text)) AS p(at)"
        f" WHERE c.terms[p.at:p.at + {len(tokens) - 1}] = %s::text[])"
    )


def scope_sql(project: str | None, all_projects: bool, params: list, column: str = "project") -> str:
    """The project filter of a search: one project and personal notes ('' here), or none."""
    if all_projects:
        return "true"
    if not project:
        return f"{column} = ''"
    params.append(project)
    return f"{column} IN ('', %s)"


def _matching(match: Match, params: list) -> tuple[str, str]:
    """(the candidate rows' SQL with each phrase's count, the condition a row matches on)."""
    counts = [phrase_count(tokens, params) for tokens in match.phrases]
    params.append(sorted({tokens[0] for tokens in match.phrases if tokens}))
    hits = (
        f"SELECT c.id, c.project, cardinality(c.terms)::float8 AS size, ARRAY[{', '.join(counts)}]::float8[] AS f"
        " FROM chunks c WHERE c.terms && %s::text[]"
    )
    join = " AND " if match.every else " OR "
    condition = join.join(f"f[{i}] > 0" for i in range(1, len(counts) + 1))
    return hits, condition


def bm25_sql(match: Match, where: str, where_params: Sequence, limit: int | None) -> tuple[str, list]:
    """SQL of (chunk id, bm25 relevance) for matching chunks that pass ``where``, best first."""
    params: list = []
    hits, condition = _matching(match, params)
    phrases = range(1, len(match.phrases) + 1)
    df = ", ".join(f"count(*) FILTER (WHERE f[{i}] > 0)" for i in phrases)
    terms = " + ".join(
        f"(CASE WHEN ln((s.n - d.n[{i}] + 0.5) / (d.n[{i}] + 0.5)) <= 0 THEN {IDF_FLOOR}"
        f" ELSE ln((s.n - d.n[{i}] + 0.5) / (d.n[{i}] + 0.5)) END)"
        f" * h.f[{i}] * {K1 + 1} / (h.f[{i}] + {K1} * (1 - {B} + {B} * h.size / s.avgdl))"
        for i in phrases
    )
    sql = (
        f"WITH hits AS MATERIALIZED ({hits}),"
        f" matching AS (SELECT * FROM hits WHERE {condition}),"
        f" d AS (SELECT ARRAY[{df}]::float8[] AS n FROM hits),"
        " s AS (SELECT sum(chunks)::float8 AS n, sum(tokens)::float8 / nullif(sum(chunks), 0) AS avgdl"
        " FROM corpus_stats)"
        f" SELECT h.id, {terms} AS score FROM matching h, d, s WHERE {where}"
        " ORDER BY score DESC, h.id" + (" LIMIT %s" if limit is not None else "")
    )
    params += list(where_params)
    if limit is not None:
        params.append(limit)
    return sql, params


def rows_up_to_sql(match: Match, cap: int) -> tuple[str, list]:
    """SQL counting the chunks that match, no further than ``cap``."""
    params: list = []
    hits, condition = _matching(match, params)
    params.append(cap)
    return f"SELECT count(*) FROM (SELECT 1 FROM ({hits}) h WHERE {condition} LIMIT %s) AS capped", params


def newest_sql(match: Match, project: str | None, all_projects: bool, k: int) -> tuple[str, list]:
    """SQL of the first chunk of the ``k`` newest observations in scope that match."""
    params: list = []
    hits, condition = _matching(match, params)
    scope = scope_sql(project, all_projects, params, "m.project")
    params.append(k)
    return (
        f"SELECT min(h.id) FROM ({hits}) h JOIN chunks c2 ON c2.id = h.id JOIN memories m ON m.id = c2.memory_id"
        f" WHERE ({condition}) AND m.kind = 'observation' AND {scope}"
        " GROUP BY m.id ORDER BY max(m.created_at) DESC LIMIT %s"
    ), params
