"""v3's rules that read the query and the evidence: a query that is only a name, and (below) how
much the keyword leg is trusted. Candidates are built by hand and run through the real stages."""

from __future__ import annotations

from dataclasses import replace

import pytest
from recall_support import NOW, assert_trace, candidate, memory

from captain_memo.config import PROFILES, RankConfig, rank_config
from captain_memo.ranking.pipeline import RankRequest, rank_pool
from captain_memo.ranking.query import analyse

V2, LEGACY = PROFILES["v2"], PROFILES["legacy"]
# These hand-made pools of a few chunks stand for a real store's pools of 25+, where min-max alone
# scales the legs; how a pool this small is calibrated is tests/test_calibration.py's subject.
V3 = replace(PROFILES["v3"], calibrated_scores=False)


def ranked(cands, query: str, cfg: RankConfig):
    req = RankRequest(analyse(query, cfg.rare_token_min_length, cfg.temporal_word_forms), None, NOW, 10)
    pool = rank_pool(cands, req, cfg)
    assert_trace(pool)
    return pool


def scored(mid: int, text: str, vector: float, bm25: float):
    """A candidate as the union fusion sees it: both legs' raw scores (similarity and bm25)."""
    return replace(candidate(memory(mid), text, vector=vector), bm25=bm25)


# -- a query that is only a name -------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, only",
    [
        ("tmp_path_factory", True),
        ("PYTEST_ADDOPTS", True),
        ("monkeypatch.setattr pytest.MonkeyPatch", True),
        ("`tmp_path_factory`,", True),  # surrounding punctuation is not a word
        ("tmp_path_factory fixture", False),  # a plain word: the query says more than the name
        ("is tmp_path_factory", False),  # a stopword is still a word of the question
        ("rounding policy", False),
        ("HTTP", False),  # ALL-CAPS is a plain word (is_code_shaped)
    ],
)
def test_identifier_only_queries(query, only):
    assert analyse(query).identifier_only is only


def test_a_name_query_lifts_the_chunk_that_holds_the_name():
    """The chunk holding ``tmp_path_factory`` is long, so bm25 of the name's parts (tmp, path,
    factory) favours a short chunk without it, and the vector leg reads sub-words: after fusion the
    chunk without the name leads. Under v3 the name query gives the holder x3 and it comes first;
    the identifier boost alone (x1.3, v2's rule) would not have been enough."""
    holder = scored(1, "the tmp_path_factory fixture and many other things", vector=0.7, bm25=6.0)
    parts = scored(2, "tmp path handling of the factory", vector=0.8, bm25=8.0)
    pool = [holder, parts, scored(3, "unrelated", vector=0.5, bm25=0.0)]
    v3 = ranked(pool, "tmp_path_factory", V3)
    assert [c.memory.id for c in v3] == [1, 2, 3]
    assert [(f.name, f.value) for f in v3[0].factors] == [("identifier", pytest.approx(3.0))]
    assert v3[1].factors == ()
    without = ranked(pool, "tmp_path_factory", replace(V3, identifier_only_weight=1.0))
    assert [c.memory.id for c in without] == [2, 1, 3]
    assert without[1].factor("identifier") == pytest.approx(1.3)


def test_the_name_rule_needs_every_name_and_a_name_only_query():
    both = "monkeypatch.setattr pytest.MonkeyPatch"
    one_name = candidate(memory(1), "monkeypatch.setattr only", vector=0.5, keyword=0.5)
    two_names = candidate(memory(2), "monkeypatch.setattr and pytest.MonkeyPatch", vector=0.5, keyword=0.5)
    pool = {c.memory.id: c for c in ranked([one_name, two_names], both, V3)}
    assert pool[1].factor("identifier") == pytest.approx(1.3)  # the usual boost, one match
    assert pool[2].factor("identifier") == pytest.approx(3.0)  # every name: the name rule
    worded = {c.memory.id: c for c in ranked([one_name, two_names], "monkeypatch.setattr in fixtures", V3)}
    assert worded[1].factor("identifier") == pytest.approx(1.3)  # a worded query keeps the usual boost


@pytest.mark.parametrize("profile", ["v2", "legacy"])
def test_the_name_rule_leaves_v2_and_legacy_as_they_were(profile):
    cfg = PROFILES[profile]
    assert cfg.identifier_only_weight == 1.0
    hit = candidate(memory(1), "tmp_path_factory", vector=0.5, keyword=1.0, vector_rank=1, keyword_rank=1)
    (c,) = ranked([hit], "tmp_path_factory", cfg)
    assert [(f.name, f.value) for f in c.factors] == [("identifier", pytest.approx(1.3))]


def test_the_name_weight_is_a_setting():
    cfg = rank_config("v3", {"CAPTAIN_MEMO_IDENTIFIER_ONLY_WEIGHT": "2"})
    (c,) = ranked([candidate(memory(1), "tmp_path_factory", vector=0.5, keyword=1.0)], "tmp_path_factory", cfg)
    assert c.factor("identifier") == pytest.approx(2.0)
    refused = rank_config("v3", {"CAPTAIN_MEMO_IDENTIFIER_ONLY_WEIGHT": "1e9"})
    assert refused.identifier_only_weight == V3.identifier_only_weight


# -- the identifier-only query set (scripts/identifier_queries.py) -------------------------------------


def test_identifier_query_set_labels_every_document_holding_the_name():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "identifier_queries.py"
    spec = importlib.util.spec_from_file_location("identifier_queries", path)
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    corpus = [
        {"id": "a", "text": "Use ``tmp_path_factory`` for session folders."},
        {"id": "b", "text": "tmp_path_factory.mktemp now checks its name; see pytest.approx too."},
        {"id": "c", "text": "The tmp path of a factory, in plain words."},
    ] + [{"id": f"n{i}", "text": f"every_note mentions this ({i})"} for i in range(script.MAX_DOCS + 1)]
    queries, qrels = script.build(corpus, count=10)
    by_name = {q["text"]: {doc for qid, doc in qrels if qid == q["id"]} for q in queries}
    assert by_name["tmp_path_factory"] == {"a"}  # a token, not a prefix of tmp_path_factory.mktemp
    assert by_name["tmp_path_factory.mktemp"] == {"b"}
    assert by_name["pytest.approx"] == {"b"}
    assert "every_note" not in by_name  # held by more than MAX_DOCS documents
    assert all(analyse(name).identifier_only for name in by_name)
