"""The worked example: ``get_effective_contract_price rounding``.

Note A names the function; note B is about the rounding policy (keep every decimal place, quantize
once) and contains neither query word. After fusion B outranks A; the identifier boost puts A first
and B, second, is still returned.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from fakes import TableEmbedder
from recall_support import SAMPLE, assert_trace, at_similarity, candidate, memory, run_cli

from captain_memo.config import PROFILES
from captain_memo.engine.core import Engine
from captain_memo.ranking import boosts
from captain_memo.ranking.candidates import by_score
from captain_memo.ranking.fusion import fuse
from captain_memo.ranking.query import analyse
from captain_memo.store import NewMemory, Store

QUERY = "get_effective_contract_price rounding"
A_TEXT = (
    "get_effective_contract_price walks the contract override, then the volume tiers, then the list price; "
    "the first source with a row for the SKU wins."
)
B_TEXT = (
    "Price precision: never quantize intermediate amounts. Discounts and tier multipliers keep every decimal "
    "place; the line total is brought to cents once, at the end."
)
FILLER = ["Invoice numbers are gapless per legal entity.", "Payment webhooks go through the outbox table."]
DIM = 8


@pytest.fixture
def controlled(db_file):
    """A real store whose vectors are chosen: sim(query, A) = 0.62, sim(query, B) = 0.81, fillers 0.5."""
    table = {
        QUERY: at_similarity(1.0, 1, DIM),
        A_TEXT: at_similarity(0.62, 1, DIM),
        B_TEXT: at_similarity(0.81, 2, DIM),
    }
    engine = Engine(Store(db_file), TableEmbedder(table, DIM))
    ids = {}
    for name, text in (("A", A_TEXT), ("B", B_TEXT), ("F1", FILLER[0]), ("F2", FILLER[1])):
        ids[name] = engine.remember(NewMemory(body=text, chunks=(text,)))
    yield engine, ids
    engine.close()


def test_worked_example_with_controlled_similarities(controlled):
    engine, ids = controlled
    result = engine.recall(QUERY, record=False, profile="v2")
    assert_trace(result.hits)
    a, b = result.hits[0], result.hits[1]
    assert (a.memory.id, b.memory.id) == (ids["A"], ids["B"])
    # B: vector 0.81, no keyword hit, fused 0.810 at full weight.
    assert b.vector == pytest.approx(0.81, abs=1e-6) and b.keyword is None
    assert f"{b.fused:.3f}" == "0.810" and b.factors == () and f"{b.score:.3f}" == "0.810"
    # A: the only keyword hit (1.0): 0.7 × 0.62 + 0.3 × 1.0 = 0.734, below B after fusion ...
    assert a.vector == pytest.approx(0.62, abs=1e-6) and a.keyword == 1.0
    assert f"{a.fused:.3f}" == "0.734" and a.fused < b.fused
    # ... and first after the identifier boost: 0.734 × 1.3 = 0.954.
    assert [(f.name, f.value) for f in a.factors] == [("identifier", pytest.approx(1.3))]
    assert f"{a.score:.3f}" == "0.954"
    assert result.legs == ("vector", "keyword")


def test_without_the_identifier_boost_b_leads(controlled):
    engine, ids = controlled
    result = engine.recall(QUERY, record=False, cfg=replace(PROFILES["v2"], identifier_boost=False))
    assert [h.memory.id for h in result.hits[:2]] == [ids["B"], ids["A"]]


def test_worked_example_stage_by_stage():
    """The same numbers through the stage functions: fusion, then the boosts."""
    cfg = PROFILES["v2"]
    a = candidate(memory(1), A_TEXT, vector=0.62, keyword=1.0)
    b = candidate(memory(2), B_TEXT, vector=0.81)
    fused = by_score(fuse([a, b], cfg))
    assert [(c.memory.id, round(c.score, 3)) for c in fused] == [(2, 0.810), (1, 0.734)]
    boosted = by_score(boosts.apply_boosts(fused, analyse(QUERY), None, cfg))
    assert [(c.memory.id, round(c.score, 3)) for c in boosted] == [(1, 0.954), (2, 0.810)]


# -- on real embeddings, through the command line ----------------------------------------------------


def test_worked_example_from_the_cli_on_real_embeddings(cli_env, capsys):
    db = str(cli_env)
    run_cli(capsys, "--db", db, "import", str(SAMPLE))
    out = run_cli(
        capsys,
        "--db",
        db,
        "recall",
        "--json",
        "--explain",
        "--profile",
        "v2",
        "--branch",
        "feature/contract-pricing",
        "--project",
        "none",
        QUERY,
    )
    data = json.loads(out)
    assert data["profile"] == "v2" and data["legs"] == ["vector", "keyword"]
    a, b = data["hits"][0], data["hits"][1]
    assert "get_effective_contract_price" in a["text"]
    assert b["title"] == "Effective contract price: keep every decimal place"
    # After fusion B (vector only) leads A (both legs) ...
    assert b["explain"]["keyword"] is None and a["explain"]["keyword"] == 1.0
    assert b["explain"]["fused"] == b["explain"]["vector"]
    assert b["explain"]["fused"] > a["explain"]["fused"]
    # ... the identifier boost puts A first; B keeps its place as second.
    assert [(f["name"], f["value"]) for f in a["explain"]["factors"]] == [("identifier", 1.3)]
    assert {f["name"] for f in b["explain"]["factors"]} <= {"branch"}
    assert a["score"] > b["score"] > data["hits"][2]["score"]
    # Not on a knife edge (measured: fused 0.857 vs 0.793, final 1.031 vs 0.942).
    assert b["explain"]["fused"] - a["explain"]["fused"] > 0.03
    assert a["score"] - b["score"] > 0.03
    for hit in data["hits"]:
        assert hit["score"] == pytest.approx(hit["explain"]["product"], abs=1e-5)

    text = run_cli(
        capsys,
        "--db",
        db,
        "recall",
        "--explain",
        "--profile",
        "v2",
        "--branch",
        "feature/contract-pricing",
        "--project",
        "none",
        QUERY,
    )
    first, second = text.split("\n 2. ")[0], text.split("\n 2. ")[1].split("\n 3. ")[0]
    assert "get_effective_contract_price" in first.splitlines()[0]
    assert "x 1.300 identifier (get_effective_contract_price)" in first
    assert "keyword absent" in second and "identifier" not in second


def test_under_the_default_v3_a_is_still_first(controlled):
    """v3 scores both notes on both legs over the union: A, the only keyword hit, gets keyword 1.0 and
    B about 0; scaled over the four notes, A leads on fusion already and the identifier boost widens it."""
    engine, ids = controlled
    result = engine.recall(QUERY, record=False)
    assert result.profile == "v3"
    assert_trace(result.hits)
    a, b = result.hits[0], result.hits[1]
    assert (a.memory.id, b.memory.id) == (ids["A"], ids["B"])
    assert a.keyword == 1.0 and b.keyword < 0.01  # B shares only the part "price" of the identifier
    assert [(f.name, f.value) for f in a.factors if f.name != "calibrated"] == [("identifier", pytest.approx(1.3))]
    # Four notes are a pool too small for min-max alone: the trace says how the score was calibrated.
    assert "a pool of 4" in next(f.detail for f in a.factors if f.name == "calibrated")


def test_under_the_default_v3_a_is_first_from_the_cli_on_real_embeddings(cli_env, capsys):
    db = str(cli_env)
    run_cli(capsys, "--db", db, "import", str(SAMPLE))
    data = json.loads(
        run_cli(
            capsys,
            "--db",
            db,
            "recall",
            "--json",
            "--explain",
            "--branch",
            "feature/contract-pricing",
            "--project",
            "none",
            QUERY,
        )
    )
    assert data["profile"] == "v3"
    titles = [hit["title"] for hit in data["hits"]]
    assert "get_effective_contract_price" in data["hits"][0]["text"]
    assert "Effective contract price: keep every decimal place" in titles[:3]


def test_note_b_shares_no_keyword_with_the_query():
    """FTS5 with the porter stemmer: 'round', 'rounded' and 'rounding' all match 'rounding', so B
    must avoid them all, and the identifier, for the example to hold. Only A may match."""
    import sqlean

    from captain_memo.base.chunking import chunk_texts
    from captain_memo.ranking.query import fts_match

    conn = sqlean.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title UNINDEXED, text, tokenize = 'porter unicode61')")
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        note = json.loads(line)
        for chunk in chunk_texts(note["title"], note["text"]):
            conn.execute("INSERT INTO t (title, text) VALUES (?, ?)", (note["title"], chunk))
    hits = {row[0] for row in conn.execute("SELECT title FROM t WHERE t MATCH ?", (fts_match(QUERY),))}
    assert hits == {"get_effective_contract_price: lookup order and caching"}
    assert conn.execute("SELECT count(*) FROM t WHERE t MATCH 'round OR rounded OR rounds'").fetchone()[0] == 0


def test_demo_shows_the_identifier_boost(cli_env, capsys):
    out = run_cli(capsys, "demo")
    ranks = [line for line in out.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    assert "get_effective_contract_price" in ranks[0]
    assert "Effective contract price: keep every decimal place" in ranks[1]
    assert "x 1.300 identifier (get_effective_contract_price)" in out
