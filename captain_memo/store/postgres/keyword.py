"""The team store's keyword leg: FTS5's bm25, computed in Postgres over FTS5's own tokens.

Postgres's ``ts_rank`` is not bm25, and its parser does not split text as FTS5's unicode61 does,
each chunk keeps the token sequence FTS5 makes of it (terms.py) in ``chunks.terms``, from which
a trigger writes its postings (``chunk_terms``: token, chunk, count, chunk size), and the score is
FTS5's formula (fts5_aux.c,
fts5Bm25Function), phrase by phrase:

    idf(p)   = ln((N - n(p) + 0.5) / (n(p) + 0.5)), or 1e-6 when that is not positive
    score    = sum over p of idf(p) * f(p) * (k1 + 1) / (f(p) + k1 * (1 - b + b * D / avgdl))

with N the chunks the role can read, n(p) those holding phrase p, f(p) how often p occurs in the
chunk (at consecutive positions), D its token count and avgdl the mean token count; k1 = 1.2,
b = 0.75. Like FTS5, every matching chunk is scored before the best are taken.

Curated text (every memory but an observation) is also scored with statistics of its own, as the
local store's second FTS5 index scores it (store/keyword.py ``curated_keyword_leg``): N, n(p) and
avgdl counted over the curated chunks alone, from the postings and counts marked curated (schema.py,
migration 4).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from captain_memo.store.postgres.terms import Match, Tokenizer
from captain_memo.store.protocol import Scope

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6  # FTS5's idf for a phrase in half the rows or more
# Under union fusion the engine scores the vector leg's hits by keywords right after the keyword leg
# ran the same query: the idf and avgdl that leg computed serve for this long, so scoring 25 more
# chunks reads only their postings (14 ms with a recount of the corpus's postings, 1,647 documents
# at load 13 on 2 cores). A write in between moves them as little as it would between two FTS5 calls.
STATISTICS_TTL_S = 2.0
STATISTICS_KEPT = 16


def phrase_count(tokens: Sequence[str], params: list) -> str:
    """SQL for how often the phrase ``tokens`` occurs in the chunk of a group of postings ``p``
    (its parameters appended): a token's count is in its posting; a phrase of several tokens is
    counted in the chunk's token array, and only where every one of its tokens is present."""
    if not tokens:
        return "0"
    if len(tokens) == 1:
        params.append(tokens[0])
        return "coalesce(max(p.tf) FILTER (WHERE p.term = %s), 0)"
    params += [list(set(tokens)), len(set(tokens)), tokens[0], list(tokens)]
    return (
        "CASE WHEN count(*) FILTER (WHERE p.term = ANY(%s::text[])) = %s THEN"
        " (SELECT count(*) FROM chunks c, unnest(array_positions(c.terms, %s::text)) AS a(at)"
        f" WHERE c.id = p.chunk_id AND c.terms[a.at:a.at + {len(tokens) - 1}] = %s::text[]) ELSE 0 END"
    )


def scope_sql(project: str | None, all_projects: bool, params: list, column: str = "project") -> str:
    """The project filter of a search: one project and personal notes ('' here), or none."""
    if all_projects:
        return "true"
    if not project:
        return f"{column} = ''"
    params.append(project)
    return f"{column} IN ('', %s)"


def _matching(
    match: Match, params: list, chunk_ids: Sequence[int] | None = None, curated: bool = False
) -> tuple[str, str]:
    """(the chunks holding any query token (of ``chunk_ids`` only, when given; curated ones only,
    with ``curated``), with each phrase's count; the condition a chunk matches on)."""
    counts = [phrase_count(tokens, params) for tokens in match.phrases]
    params.append(sorted({token for tokens in match.phrases for token in tokens}))
    only = ""
    if chunk_ids is not None:
        only = " AND p.chunk_id = ANY(%s::bigint[])"
        params.append(list(chunk_ids))
    if curated:
        only += " AND p.curated"
    hits = (
        f"SELECT p.chunk_id AS id, p.project, max(p.size)::float8 AS size, ARRAY[{', '.join(counts)}]::float8[] AS f"
        f" FROM chunk_terms p WHERE p.term = ANY(%s::text[]){only} GROUP BY p.chunk_id, p.project"
    )
    join = " AND " if match.every else " OR "
    condition = join.join(f"f[{i}] > 0" for i in range(1, len(counts) + 1))
    return hits, condition


def bm25_sql(
    match: Match, where: str, where_params: Sequence, limit: int | None, curated: bool = False
) -> tuple[str, list]:
    """SQL of (chunk id, bm25 relevance, the phrases' idf, avgdl) for matching chunks that pass
    ``where``, best first; with ``curated``, of curated chunks over curated text's statistics."""
    params: list = []
    hits, condition = _matching(match, params, curated=curated)
    chunks, tokens = ("curated_chunks", "curated_tokens") if curated else ("chunks", "tokens")
    phrases = range(1, len(match.phrases) + 1)
    # Each phrase's idf once per query, from how many chunks hold it (n) among all a role sees (N).
    ratio = "ln((s.n - count(*) FILTER (WHERE h.f[{i}] > 0) + 0.5) / (count(*) FILTER (WHERE h.f[{i}] > 0) + 0.5))"
    idf = ", ".join(
        f"CASE WHEN {ratio.format(i=i)} <= 0 THEN {IDF_FLOOR} ELSE {ratio.format(i=i)} END" for i in phrases
    )
    sql = (
        f"WITH hits AS MATERIALIZED ({hits}),"
        f" s AS MATERIALIZED (SELECT sum({chunks})::float8 AS n, sum({tokens})::float8 / nullif(sum({chunks}), 0)"
        " AS avgdl FROM corpus_stats),"
        f" q AS MATERIALIZED (SELECT ARRAY[{idf}]::float8[] AS idf, s.avgdl FROM hits h, s GROUP BY s.n, s.avgdl)"
        f" SELECT h.id, {_score(match)} AS score, q.idf, q.avgdl FROM hits h, q WHERE ({condition}) AND {where}"
        " ORDER BY score DESC, h.id" + (" LIMIT %s" if limit is not None else "")
    )
    params += list(where_params)
    if limit is not None:
        params.append(limit)
    return sql, params


def _score(match: Match) -> str:
    """bm25 of a chunk ``h`` (its phrase counts ``f`` and ``size``) given ``q``'s idf and avgdl."""
    return " + ".join(
        f"q.idf[{i}] * h.f[{i}] * {K1 + 1} / (h.f[{i}] + {K1} * (1 - {B} + {B} * h.size / q.avgdl))"
        for i in range(1, len(match.phrases) + 1)
    )


def known_scores_sql(
    match: Match, idf: Sequence[float], avgdl: float, chunk_ids: Sequence[int], curated: bool = False
) -> tuple[str, list]:
    """SQL of (chunk id, bm25 relevance) for given chunks (the curated ones, with ``curated``), with
    the corpus statistics known already (from the keyword leg of the same query): only those chunks'
    postings are read."""
    params: list = []
    hits, condition = _matching(match, params, chunk_ids, curated)
    params += [list(idf), avgdl]
    sql = (
        f"WITH hits AS ({hits}), q AS (SELECT %s::float8[] AS idf, %s::float8 AS avgdl)"
        f" SELECT h.id, {_score(match)} FROM hits h, q WHERE {condition}"
    )
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


class TeamKeywordSearch:
    """The keyword searches of store/search.py, run by the team store (mixed into ``TeamStore``,
    which supplies ``tokenizer``, ``fetch`` and ``one``)."""

    if TYPE_CHECKING:
        tokenizer: Tokenizer
        _statistics: dict[tuple[bool, str], tuple[float, list[float], float]]

        def fetch(self, sql: str, params: Sequence = ()) -> list[tuple]: ...

        def one(self, sql: str, params: Sequence = ()): ...

    def keyword_leg(self, match: str | None, scope: Scope, k: int) -> dict[int, float]:
        """bm25 top k in scope: chunk id -> relevance (higher is better), equal to FTS5's bm25."""
        return self._top(match, scope, k, False)

    def curated_keyword_leg(self, match: str | None, scope: Scope, k: int) -> dict[int, float] | None:
        """The top k of curated text in scope, its bm25 computed with curated text's own statistics
        (equal to the local store's ``curated_keyword_leg``)."""
        return self._top(match, scope, k, True)

    def _top(self, match: str | None, scope: Scope, k: int, curated: bool) -> dict[int, float]:
        if not match or not any((parsed := self.tokenizer.parse(match)).phrases):
            return {}
        where_params: list = []
        where = scope_sql(scope.project, scope.all_projects, where_params, "h.project")
        sql, params = bm25_sql(parsed, where, where_params, k, curated)
        rows = self.fetch(sql, params)
        if rows:
            self._remember_statistics((curated, match), rows[0][2], rows[0][3])
        return {chunk_id: score for chunk_id, score, _, _ in rows}

    def _remember_statistics(self, key: tuple[bool, str], idf: list[float], avgdl: float) -> None:
        self._statistics[key] = (time.monotonic(), idf, avgdl)
        while len(self._statistics) > STATISTICS_KEPT:
            self._statistics.pop(next(iter(self._statistics)))

    def keyword_scores(self, match: str | None, chunk_ids: Sequence[int]) -> dict[int, float]:
        """bm25 relevance of given chunks over the whole corpus (non-matching ones left out)."""
        return self._scores(match, chunk_ids, False)

    def curated_keyword_scores(self, match: str | None, chunk_ids: Sequence[int]) -> dict[int, float] | None:
        """bm25 relevance of the curated ones of given chunks, with curated text's own statistics."""
        return self._scores(match, chunk_ids, True)

    def _scores(self, match: str | None, chunk_ids: Sequence[int], curated: bool) -> dict[int, float]:
        if not match or not chunk_ids or not any((parsed := self.tokenizer.parse(match)).phrases):
            return {}
        known = self._statistics.get((curated, match))
        if known is not None and time.monotonic() - known[0] <= STATISTICS_TTL_S:
            sql, params = known_scores_sql(parsed, known[1], known[2], chunk_ids, curated)
            return dict(self.fetch(sql, params))
        sql, params = bm25_sql(parsed, "h.id = ANY(%s)", [list(chunk_ids)], None, curated)
        return {chunk_id: score for chunk_id, score, _, _ in self.fetch(sql, params)}

    def observation_chunks(self, chunk_ids: Sequence[int]) -> set[int]:
        """Those of ``chunk_ids`` that are part of an observation (a commit, a capture)."""
        if not chunk_ids:
            return set()
        rows = self.fetch(
            "SELECT c.id FROM chunks c JOIN memories m ON m.id = c.memory_id"
            " WHERE c.id = ANY(%s) AND m.kind = 'observation'",
            (list(chunk_ids),),
        )
        return {chunk_id for (chunk_id,) in rows}

    def phrase_rows_up_to(self, phrase: str, cap: int) -> int:
        """How many chunks hold ``phrase`` (one quoted phrase), counting no further than ``cap``."""
        parsed = self.tokenizer.parse(phrase)
        if not any(parsed.phrases):
            return 0
        sql, params = rows_up_to_sql(parsed, cap)
        return self.one(sql, params)[0]

    def chunk_estimate(self) -> int:
        """How many chunks this role can search (kept per project by the schema's triggers)."""
        return int(self.one("SELECT coalesce(sum(chunks), 0) FROM corpus_stats")[0])

    def newest_matching(self, topic: tuple[str | None, str | None], scope: Scope, k: int) -> list[int]:
        """As store/search.py's: chunk ids of the k newest observations in scope matching the topic
        (every topic word first, then any)."""
        found: list[int] = []
        for match in dict.fromkeys(m for m in topic if m):
            if len(found) >= k:
                break
            parsed = self.tokenizer.parse(match)
            if not any(parsed.phrases):
                continue
            sql, params = newest_sql(parsed, scope.project, scope.all_projects, k)
            for (chunk_id,) in self.fetch(sql, params):
                if chunk_id not in found and len(found) < k:
                    found.append(chunk_id)
        return found
