"""The two search legs: each catches its own failure, the result says which legs answered, and a
recall with both legs down is an error, never an empty list."""

from __future__ import annotations

import logging

import pytest
import sqlean
from recall_support import assert_trace

from captain_memo.errors import EmbeddingError, RecallError
from captain_memo.ranking.query import fts_match
from captain_memo.store import NewMemory
from captain_memo.store.search import Scope, keyword_leg

NOTES = [
    "get_effective_contract_price walks the contract override, the tiers and the list price.",
    "Invoice numbers are gapless per legal entity; they come from invoice_sequences.",
    "Payment webhooks go through the outbox table before they are applied.",
    "Tier boundaries include the lower bound: 100 seats fall in the 100-499 tier.",
]


@pytest.fixture
def stored(engine):
    for text in NOTES:
        engine.remember(NewMemory(body=text))
    return engine


def damage_keyword_index(db_file) -> None:
    """Real damage from outside the store: drop the FTS5 index's structure record."""
    conn = sqlean.connect(str(db_file), isolation_level=None)
    try:
        conn.execute("DELETE FROM chunks_fts_data WHERE id = 10")
    finally:
        conn.close()


def test_both_legs_answer(stored):
    result = stored.recall("invoice numbers gapless", record=False)
    assert result.legs == ("vector", "keyword") and result.failures == {} and not result.degraded
    assert "gapless" in result.hits[0].text
    assert_trace(result.hits)


def test_failing_vector_leg_gives_keyword_only_results(stored, caplog):
    # The embedder is the deterministic test one, told to fail as an unreachable endpoint would.
    stored.embedder.fail = EmbeddingError("embedding endpoint http://127.0.0.1:9/ refused the connection")
    with caplog.at_level(logging.WARNING, logger="captain_memo"):
        result = stored.recall("invoice numbers gapless", record=False)
    assert result.legs == ("keyword",) and result.degraded
    assert "refused the connection" in result.failures["vector"]
    assert result.hits and "gapless" in result.hits[0].text
    assert all(h.vector is None and h.keyword is not None for h in result.hits)
    assert_trace(result.hits)
    lines = [r.getMessage() for r in caplog.records if r.name == "captain_memo"]
    assert any("vector leg" in line and "refused the connection" in line for line in lines)


def test_failing_keyword_leg_gives_vector_only_results(stored, db_file, caplog):
    damage_keyword_index(db_file)
    with pytest.raises(sqlean.DatabaseError):  # the damage is real: FTS5 itself refuses
        keyword_leg(stored.store, '"invoice"', Scope(), 25)
    with caplog.at_level(logging.WARNING, logger="captain_memo"):
        result = stored.recall("invoice numbers gapless", record=False)
    assert result.legs == ("vector",) and result.degraded
    assert "malformed" in result.failures["keyword"]
    assert result.hits and "gapless" in result.hits[0].text
    assert all(h.keyword is None and h.vector is not None for h in result.hits)
    assert_trace(result.hits)
    lines = [r.getMessage() for r in caplog.records if r.name == "captain_memo"]
    assert any("keyword leg" in line and "malformed" in line for line in lines)


def test_both_legs_failing_raises(stored, db_file):
    damage_keyword_index(db_file)
    stored.embedder.fail = EmbeddingError("embedding endpoint down")
    with pytest.raises(RecallError) as caught:
        stored.recall("invoice numbers gapless")
    message = str(caught.value)
    assert "vector" in message and "keyword" in message and "endpoint down" in message
    # A damaged file is named, with what to do, not left as a bare SQLite error.
    assert str(db_file) in message and "captain-memo doctor" in message


def test_a_leg_can_be_left_out_on_purpose(stored):
    only_keyword = stored.recall("gapless", legs=("keyword",), record=False)
    assert only_keyword.legs == ("keyword",) and only_keyword.failures == {}
    only_vector = stored.recall("gapless", legs=("vector",), record=False)
    assert only_vector.legs == ("vector",) and all(h.keyword is None for h in only_vector.hits)


def test_degraded_result_is_announced_by_the_cli(stored, db_file, monkeypatch, capsys):
    from captain_memo.cli import main as cli

    damage_keyword_index(db_file)
    stored.close()
    monkeypatch.setattr("captain_memo.engine.core.make_embedder", lambda cfg, **_: stored.embedder)
    assert cli.main(["--db", str(db_file), "recall", "--project", "none", "invoice", "numbers"]) == 0
    out = capsys.readouterr().out
    assert "legs: vector" in out and "keyword leg failed" in out


# -- what each leg scores -----------------------------------------------------------------------------


def test_vector_similarity_from_the_l2_distance(db_file):
    """sqlite-vec returns L2 distances; the leg turns them into 1 - d²/4 with no tuning constant."""
    import numpy as np
    from fakes import TableEmbedder

    from captain_memo.engine.core import Engine
    from captain_memo.store import Store

    dim = 4
    e0, e1 = np.eye(dim)[0], np.eye(dim)[1]
    table = {"query": e0, "same": e0, "orthogonal": e1, "opposite": -e0, "between": e0 + e1}
    engine = Engine(Store(db_file), TableEmbedder(table, dim))
    try:
        ids = {text: engine.remember(NewMemory(body=text, chunks=(text,))) for text in table if text != "query"}
        result = engine.recall("query", legs=("vector",), record=False)
        sims = {h.memory.id: h.vector for h in result.hits}
        assert sims[ids["same"]] == pytest.approx(1.0, abs=1e-6)
        assert sims[ids["orthogonal"]] == pytest.approx(0.5, abs=1e-6)
        assert sims[ids["opposite"]] == pytest.approx(0.0, abs=1e-6)
        assert sims[ids["between"]] == pytest.approx((1 + 2**-0.5) / 2, abs=1e-6)  # (1 + cos) / 2
    finally:
        engine.close()


def test_keyword_scores_are_min_max_normalised(engine):
    a = engine.remember(NewMemory(body="ledger export"))
    b = engine.remember(NewMemory(body="ledger export"))  # the same text: the same bm25
    only = engine.recall("ledger", legs=("keyword",), record=False)
    assert {h.memory.id: h.keyword for h in only.hits} == {a: 1.0, b: 1.0}  # all tied: all 1.0
    c = engine.remember(NewMemory(body="ledger ledger ledger export of the quarterly ledger"))
    d = engine.remember(
        NewMemory(
            body="a long note that mentions the ledger once among many other words "
            "about payouts, refunds, chargebacks, disputes and settlement files"
        )
    )
    scores = {h.memory.id: h.keyword for h in engine.recall("ledger", legs=("keyword",), record=False).hits}
    assert max(scores.values()) == 1.0 and min(scores.values()) == 0.0
    assert scores[c] == 1.0 and scores[d] == 0.0
    assert all(h.bm25 > 0 for h in engine.recall("ledger", legs=("keyword",), record=False).hits)
    single = engine.recall("quarterly", legs=("keyword",), record=False)
    assert [(h.memory.id, h.keyword) for h in single.hits] == [(c, 1.0)]


def test_commits_sharing_a_docs_words_leave_it_its_place_in_the_keyword_pool(engine):
    """Short commit messages dense with a doc section's words outrank it on bm25, and enough of them
    filled the keyword leg's every place: under v3 the leg takes curated text and observations apart,
    so the section that answers stays a candidate (store/search.py, PER_KIND_DEPTH)."""
    from dataclasses import replace

    from captain_memo.config import PROFILES
    from captain_memo.records import Leg

    section = (
        "Rerunning only failures: with the last-failed option, a run starts from the tests that failed "
        "before and skips every other one, so a long suite is quick to run again while its fixes are made; "
        "the first-failed option runs those first and all others after them, in their usual order."
    )
    commits = [f"cache: rerun failed tests from the cache, case {i}" for i in range(30)]
    commits += [f"docs: fix a typo in chapter {i}" for i in range(60)]  # so the shared words are not common
    engine.remember_many(
        [NewMemory(body=section, title="Rerunning only failures")]
        + [NewMemory(body=text, kind="observation") for text in commits]
    )
    query = "rerun failed tests"

    def keyword_pool(cfg) -> list[str]:
        hits, _, _ = engine.leg_hits(query, Scope(None), cfg, (Leg.KEYWORD,))
        return [hits.rows[chunk_id][1].kind for chunk_id in hits.keyword or {}]

    v3 = replace(PROFILES["v3"], candidates_per_leg=10)
    assert keyword_pool(replace(v3, pool_per_kind=False)) == ["observation"] * 10, "the commits fill the pool"
    kinds = keyword_pool(v3)
    assert kinds.count("memory") == 1 and kinds.count("observation") == 10


def test_curated_text_is_scored_with_word_statistics_of_its_own(tmp_path):
    """A history beside the docs changes bm25's idf: words commits rarely use gain weight over those
    they use often, and Flask's docs reordered under their 3,806 commits. Under v3 a curated chunk's
    bm25 is the one a store of curated text alone gives it; observations keep the whole index's."""
    from captain_memo.store import Store
    from captain_memo.store.search import keyword_scores

    docs = [
        "Application factories: create the app inside a function and pass it the config to use.",
        "Configuration: the config object holds settings; load them from a file or the environment.",
        "Testing: the test client sends requests to the app without a running server.",
    ]
    commits = [f"config: read setting {i} from the environment" for i in range(40)]
    commits += [f"docs: fix a typo in chapter {i}" for i in range(40)]
    match = fts_match("create the app in a function so tests pass their own config")

    def stored(name: str, history: list[str]) -> Store:
        store = Store(tmp_path / name)
        for text in docs:
            store.add(NewMemory(body=text, title=text.split(":")[0]), [text], None)
        for text in history:
            store.add(NewMemory(body=text, kind="observation"), [text], None)
        return store

    alone, beside = stored("docs.db", []), stored("store.db", commits)
    try:
        expected = keyword_leg(alone, match, Scope(None), 10, per_kind=True)
        found = keyword_leg(beside, match, Scope(None), 10, per_kind=True, curated_statistics=True)
        curated = {chunk_id: score for chunk_id, score in found.items() if chunk_id in expected}
        assert curated == pytest.approx(expected) and len(curated) == len(docs)
        assert len(found) - len(curated) == 10, "the observations keep their own places"
        assert keyword_scores(beside, match, list(expected), curated_statistics=True) == pytest.approx(expected)
        whole = keyword_scores(beside, match, list(expected))
        assert whole != pytest.approx(expected), "the history moves the docs' bm25"
        # The index of curated text follows what is written: a doc forgotten leaves it.
        first = min(expected)
        beside.delete(beside.chunk_rows([first])[first][1].id)
        assert first not in beside.curated_keyword_leg(match, Scope(None), 10)
    finally:
        alone.close()
        beside.close()


def test_curated_texts_own_index_follows_a_memorys_change_of_kind(tmp_path):
    """A rewrite sets the kind and keeps the rows of chunks whose text did not change: a memory that
    stops being an observation brings its chunks into curated text's index, and back out again."""
    from captain_memo.store import Store

    text = "Rotate the signing keys every quarter."
    match = fts_match("signing keys")
    store = Store(tmp_path / "kinds.db")
    try:
        memory_id = store.add(NewMemory(body=text, kind="observation"), [text], None)
        assert store.curated_keyword_leg(match, Scope(None), 10) == {}
        store.rewrite(memory_id, NewMemory(body=text, kind="memory"), [text], None)
        assert len(store.curated_keyword_leg(match, Scope(None), 10)) == 1
        store.rewrite(memory_id, NewMemory(body=text, kind="observation"), [text], None)
        assert store.curated_keyword_leg(match, Scope(None), 10) == {}
        assert store.counts()["curated_chunks"] == store.counts()["curated_fts_rows"] == 0
    finally:
        store.close()
