"""Smaller ranking defects found by replaying public test vectors, each through the real stages
(and the real store where the defect lived there)."""

from __future__ import annotations

import json

import pytest
from recall_support import NOW, candidate, days_ago, memory

from captain_memo.config import PROFILES, rank_config
from captain_memo.ranking import lifecycle
from captain_memo.ranking.pipeline import RankRequest, rank_pool
from captain_memo.ranking.query import analyse
from captain_memo.store import NewMemory

V2 = PROFILES["v2"]


def ranked_one(query: str, text: str, cfg, **mem):
    req = RankRequest(analyse(query, cfg.rare_token_min_length), None, NOW, cfg.result_limit)
    (hit,) = rank_pool([candidate(memory(**mem), text, vector=0.8)], req, cfg)
    return hit


@pytest.mark.parametrize("word", ["latest", "current", "release", "version", "newest", "recently", "versions"])
def test_temporal_and_release_words_are_not_rare_tokens(word):
    assert word not in analyse(f"{word} ledger export").rare_words
    hit = ranked_one(f"what is the {word}", f"the {word} of the team", V2)
    assert hit.factor("rare_token") == 1.0
    # A topic word beside it still counts.
    assert ranked_one(f"{word} ledger", f"the {word} ledger", V2).factor("rare_token") == V2.rare_token_weight


@pytest.mark.parametrize("profile", ["v2", "v3"])
def test_a_half_life_of_zero_means_no_decay(profile):
    cfg = rank_config(profile, env={"CAPTAIN_MEMO_TEMPORAL_HALF_LIFE_DAYS": "0"})
    assert lifecycle.recency_factor(400.0, cfg) == 1.0
    hit = ranked_one("latest ledger export", "ledger export", cfg, kind="observation", age_days=400)
    assert hit.factor("recency") == 1.0


@pytest.mark.parametrize("stability", [0.0, -3.0])
def test_a_stored_stability_of_zero_or_less_reads_as_fresh(engine, stability):
    mid = engine.remember(
        NewMemory(body="outbox worker picked up a webhook twice", kind="observation", created_at=days_ago(300))
    )
    with engine.store.write() as conn:
        conn.execute(
            "UPDATE memories SET stability = ?, last_surfaced = ?, updated_at = ? WHERE id = ?",
            (stability, days_ago(300), days_ago(300), mid),
        )
    for profile in ("v2", "v3"):
        (hit,) = engine.recall("outbox webhook", record=False, profile=profile).hits
        assert hit.factor("tide") == 1.0, profile
    assert lifecycle.tide_multiplier(300, stability, V2) == 1.0
    # The next strengthening starts again from the initial stability, never from S <= 0.
    engine.recall("outbox webhook", profile="v2")
    assert engine.store.get(mid).stability == pytest.approx(lifecycle.strengthened(7.0, V2.tide_gain_search, V2))


@pytest.mark.parametrize("profile", ["v2", "v3"])
def test_stats_dormant_count_agrees_with_the_ranking(engine, db_file, capsys, monkeypatch, profile):
    """An observation opened in full long ago: v2 exempts it from Tide for good, v3 restarted its
    clock when it was opened; either way the ranking does not hold it dormant, and neither may stats."""
    from captain_memo.cli import main as cli

    monkeypatch.setenv("CAPTAIN_MEMO_RANK_PROFILE", profile)
    cfg = rank_config()
    opened = engine.remember(NewMemory(body="outbox worker picked up a webhook twice", kind="observation"))
    sunk = engine.remember(NewMemory(body="refund batch retried after a timeout", kind="observation"))
    engine.show(opened, cfg)
    with engine.store.write() as conn:  # both went unused for 400 days since
        conn.execute(
            "UPDATE memories SET created_at = ?, updated_at = ?, last_surfaced = ?, last_opened = ? WHERE id = ?",
            (days_ago(800), days_ago(800), days_ago(400), days_ago(400), opened),
        )
        conn.execute(
            "UPDATE memories SET created_at = ?, updated_at = ? WHERE id = ?", (days_ago(800), days_ago(800), sunk)
        )
    hits = {h.memory.id: h for h in engine.recall("outbox webhook refund batch", record=False).hits}
    ranking_dormant = {
        mid
        for mid, h in hits.items()
        if h.factor("tide") < cfg.tide_floor + (1 - cfg.tide_floor) * cfg.tide_dormant_buoyancy
    }
    assert cli.main(["--db", str(db_file), "stats", "--json"]) == 0
    tide = json.loads(capsys.readouterr().out)["tide"]
    assert tide["dormant"] == len(ranking_dormant)
    if profile == "v2":
        assert ranking_dormant == {sunk} and hits[opened].factor("tide") == 1.0
