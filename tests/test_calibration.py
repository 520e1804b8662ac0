"""A score means the same thing whatever the pool: min-max over a pool of one or two says nothing
about relevance, so a small pool leans on each leg's own scale (ranking/union.py ``calibrated``),
and the trace says so. Pure stages first, then the CLI on a real store and the local model."""

from __future__ import annotations

from dataclasses import replace

import pytest
from recall_support import NOW, assert_trace, candidate, memory, run_cli

from captain_memo.config import PROFILES
from captain_memo.ranking.pipeline import RankRequest, rank_pool
from captain_memo.ranking.query import analyse
from captain_memo.ranking.union import FULL_POOL

V3 = PROFILES["v3"]


def ranked(cands, query: str = "what did we decide about rounding", cfg=V3):
    req = RankRequest(analyse(query, cfg.rare_token_min_length, cfg.temporal_word_forms), None, NOW, 10)
    pool = rank_pool(cands, req, cfg)
    assert_trace(pool)
    return pool


def scored(mid: int, vector: float | None, bm25: float | None):
    return replace(candidate(memory(mid), f"chunk {mid}", vector=vector), bm25=bm25)


def calibration(c) -> str:
    [factor] = [f for f in c.factors if f.name == "calibrated"]
    return factor.detail


def test_a_lone_weak_candidate_reads_weak_not_one():
    """The defect: "vector 0.570, keyword absent, fused 1.000" for an unrelated note alone in the pool."""
    [lone] = ranked([scored(1, vector=0.57, bm25=None)])
    assert lone.fused == pytest.approx(1.0)  # what min-max alone says
    assert lone.score < 0.1
    assert "a pool of 1: min-max alone reads 1.000" in calibration(lone)


def test_a_lone_strong_candidate_reads_strong():
    [lone] = ranked([scored(1, vector=0.90, bm25=8.0)])  # cosine 0.8 and a good bm25
    assert lone.score > 0.7


def test_a_hit_of_one_leg_is_never_one_because_it_stood_alone():
    """The keyword leg answered but no candidate holds a query word: there is no keyword evidence,
    and a vector hit is not "best on both legs". In a full pool too (no calibration there)."""
    pool = [scored(n, vector=0.60 + n / 100, bm25=0.0) for n in range(FULL_POOL + 2)]
    top = ranked(pool)[0]
    assert top.keyword == 0.0 and top.fused == pytest.approx(0.5)
    two = ranked([scored(1, vector=0.60, bm25=0.0), scored(2, vector=0.58, bm25=3.0)])
    assert max(c.score for c in two) < 1.0
    assert two[0].memory.id == 2  # the one both legs found


def test_a_pool_of_two_close_candidates_stays_close():
    """Min-max puts two near-equal candidates at 1.0 and 0.0; their own scales keep them near."""
    first, second = ranked([scored(1, vector=0.80, bm25=2.0), scored(2, vector=0.79, bm25=1.9)])
    assert first.fused == pytest.approx(1.0)
    assert first.memory.id == 1 and 0 < first.score - second.score < 0.2
    why = calibration(second)
    assert "a pool of 2: min-max alone reads 0.000" in why and "weighed 89%" in why


def test_a_full_pool_is_scaled_by_min_max_alone():
    """Every pool of the eval sets holds 25+ candidates: their figures cannot move."""
    pool = [scored(n, vector=0.5 + n / 40, bm25=float(n % 4)) for n in range(FULL_POOL)]
    calibrated = ranked(pool)
    plain = ranked(pool, cfg=replace(V3, calibrated_scores=False))
    assert [(c.memory.id, c.score) for c in calibrated] == [(c.memory.id, c.score) for c in plain]
    assert not any(f.name == "calibrated" for c in calibrated for f in c.factors)


def test_explain_shows_why_a_lone_note_scores_low(cli_env, capsys):
    db = str(cli_env)
    run_cli(capsys, "--db", db, "remember", "--title", "Deploys", "Deploys go through the staging pipeline first.")
    out = run_cli(capsys, "--db", db, "recall", "--explain", "how do we round money amounts")
    lines = out.splitlines()
    score = float(lines[0].split()[1])
    assert score < 0.3, out
    assert any("calibrated (a pool of 1: min-max alone reads" in line for line in lines), out
