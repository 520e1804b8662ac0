"""The evaluation harness: BEIR loading, metrics, the embedding cache, and runs through recall."""

from __future__ import annotations

import json
import math

import pytest
from fakes import HashEmbedder

from captain_memo.errors import InputError
from captain_memo.evaluation import metrics
from captain_memo.evaluation.cache import CachedEmbedder, EmbeddingCache
from captain_memo.evaluation.data import load
from captain_memo.evaluation.methods import Method, default_methods, single_leg
from captain_memo.evaluation.runner import build_store, evaluate
from captain_memo.store.search import Scope

DOCS = [
    {"id": "d1", "title": "Rounding", "text": "Never round intermediate prices; keep full decimal places."},
    {"id": "d2", "title": "Contract price", "text": "get_effective_contract_price reads the contract table."},
    {"id": "d3", "text": "The cache of query embeddings is an LRU keyed by model and text."},
    {"id": "d4", "text": "Deployments run from the release branch after the tests pass."},
    {"id": "d5", "text": "SQLite WAL mode lets readers work while one writer commits."},
]
QUERIES = [
    {"id": "q1", "text": "how are contract prices rounded?"},
    {"id": "q2", "text": "get_effective_contract_price"},
    {"id": "q3", "text": "sqlite wal readers"},
    {"id": "q4", "text": "a query with no relevant document"},
]
QRELS = [("q1", "d1", 1), ("q1", "d2", 1), ("q2", "d2", 1), ("q3", "d5", 1), ("q3", "d4", 0)]


def write_set(folder, docs=DOCS, queries=QUERIES, qrels=QRELS):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, d, s in qrels]
    (folder / "qrels.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


# -- metrics, against values worked out by hand --------------------------------------------------


def test_ndcg_one_relevant_at_rank_two():
    assert metrics.ndcg_at(["x", "a", "y"], {"a": 1}) == pytest.approx(1 / math.log2(3))


def test_ndcg_two_relevant_linear_gain():
    # DCG = 2/log2(2) + 1/log2(4) = 2.5; ideal = 2/1 + 1/log2(3) = 2.6309
    got = metrics.ndcg_at(["a", "x", "b"], {"a": 2, "b": 1})
    assert got == pytest.approx(2.5 / (2 + 1 / math.log2(3)))


def test_ndcg_counts_only_the_top_k_and_ideal_uses_every_relevant_document():
    ranked = [f"x{i}" for i in range(10)] + ["a"]
    assert metrics.ndcg_at(ranked, {"a": 1}) == 0.0
    # Three relevant documents, one found at rank 1: ideal DCG is 1 + 1/log2(3) + 1/2.
    assert metrics.ndcg_at(["a"], {"a": 1, "b": 1, "c": 1}) == pytest.approx(1 / (1 + 1 / math.log2(3) + 0.5))


def test_recall_and_mrr():
    relevant = {"a": 1, "b": 1, "c": 1, "d": 1}
    ranked = ["x", "b", "y", "a"]
    assert metrics.recall_at(ranked, relevant) == 0.5
    assert metrics.mrr_at(ranked, relevant) == 0.5
    assert metrics.mrr_at(["x"] * 10 + ["a"], relevant) == 0.0
    assert metrics.pool_recall({"a", "x"}, relevant) == 0.25


# -- loading -------------------------------------------------------------------------------------


def test_load_reads_a_beir_folder(tmp_path):
    ds = load(write_set(tmp_path / "toy"))
    assert ds.name == "toy"
    assert [d.id for d in ds.docs] == ["d1", "d2", "d3", "d4", "d5"]
    assert ds.docs[0].title == "Rounding" and ds.docs[2].title == ""
    assert [q.id for q in ds.queries] == ["q1", "q2", "q3"]  # q4 has no relevant document
    assert ds.qrels["q3"] == {"d5": 1}  # a score of 0 is not relevant


def test_load_names_what_is_wrong(tmp_path):
    with pytest.raises(InputError, match="missing qrels.tsv"):
        (tmp_path / "half").mkdir()
        (tmp_path / "half" / "corpus.jsonl").write_text("")
        (tmp_path / "half" / "queries.jsonl").write_text("")
        load(tmp_path / "half")
    folder = write_set(tmp_path / "bad")
    (folder / "corpus.jsonl").write_text('{"id": "d1", "text": "ok"}\n{"id": oops}\n')
    with pytest.raises(InputError, match=r"corpus.jsonl:2: not valid JSON"):
        load(folder)


# -- the embedding cache -------------------------------------------------------------------------


def test_cache_embeds_each_text_once_and_keys_by_model(tmp_path):
    inner = HashEmbedder()
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path / "cache"), progress=False)
    first = cached.embed(["alpha beta", "gamma", "alpha beta"])
    assert inner.texts_embedded == 2 and first.shape == (3, 384)
    again = CachedEmbedder(HashEmbedder(), EmbeddingCache(tmp_path / "cache"), progress=False)
    assert (again.embed(["gamma", "alpha beta"]) == first[[1, 0]]).all()
    assert again.inner.texts_embedded == 0  # served from disk by a new process-level object
    other = CachedEmbedder(HashEmbedder(model_id="test:other"), EmbeddingCache(tmp_path / "cache"), progress=False)
    other.embed(["gamma"])
    assert other.inner.texts_embedded == 1  # another model never reads these vectors


# -- runs through recall -------------------------------------------------------------------------


@pytest.fixture
def cached_hash(tmp_path):
    return CachedEmbedder(HashEmbedder(), EmbeddingCache(tmp_path / "cache"), progress=False)


def test_evaluate_runs_every_method_on_every_query(tmp_path, cached_hash):
    ds = load(write_set(tmp_path / "toy"))
    methods = default_methods()
    result = evaluate(ds, cached_hash, methods, progress=False, workdir=tmp_path)
    assert result.docs == 5 and len(result.outcomes) == 3
    names = {m.name for m in methods}
    for outcome in result.outcomes:
        assert set(outcome.by_method) == names
        for ranked in outcome.by_method.values():
            assert set(ranked.docs) <= {d.id for d in ds.docs}
            assert 0.0 <= ranked.ndcg <= 1.0
    q2 = next(o for o in result.outcomes if o.query.id == "q2")
    assert q2.has_identifier and q2.by_method["keyword leg only"].docs[0] == "d2"
    assert q2.by_method["keyword leg only"].mrr == 1.0
    summaries = result.summaries(["v2"])
    assert {s.subset for s in summaries} == {"all", "identifier", "plain"}
    assert not list(tmp_path.glob("captain-memo-eval-*"))  # the throwaway store is gone


@pytest.mark.parametrize("leg", ["keyword", "vector"])
def test_a_single_leg_keeps_its_own_order(tmp_path, cached_hash, leg):
    ds = load(write_set(tmp_path / "toy"))
    engine, doc_of = build_store(ds, cached_hash, tmp_path, progress=False)
    method = single_leg(leg)
    try:
        for query in ds.queries:
            pool, _, _ = engine.candidates(query.text, Scope(), method.cfg, (leg,))
            score = (lambda c: c.bm25) if leg == "keyword" else (lambda c: c.vector)
            expected = [doc_of[c.memory.id] for c in sorted(pool, key=lambda c: (-score(c), c.chunk_id))]
            got = engine.recall(query.text, record=False, legs=(leg,), cfg=method.cfg)
            assert [doc_of[h.memory.id] for h in got.hits] == list(dict.fromkeys(expected))[:10]
    finally:
        engine.close()


def test_long_documents_are_chunked_but_counted_once(tmp_path, cached_hash):
    long_text = "\n\n".join(f"Paragraph {i} about sqlite wal readers and writers." * 6 for i in range(12))
    docs = DOCS + [{"id": "long", "title": "A long note", "text": long_text}]
    ds = load(write_set(tmp_path / "toy", docs=docs, qrels=QRELS + [("q3", "long", 1)]))
    result = evaluate(ds, cached_hash, [Method("v2", single_leg("keyword").cfg, ("keyword",))], progress=False)
    assert result.chunks > len(docs)
    q3 = next(o for o in result.outcomes if o.query.id == "q3")
    ranked = q3.by_method["v2"].docs
    assert len(ranked) == len(set(ranked)) and "long" in ranked


def test_a_query_with_a_group_searches_only_its_group(tmp_path, cached_hash):
    docs = [
        {"id": "a1", "text": "pool size setting for the web app", "group": "web"},
        {"id": "b1", "text": "pool size setting for the batch jobs", "group": "batch"},
    ]
    queries = [{"id": "q", "text": "pool size setting", "group": "batch"}]
    ds = load(write_set(tmp_path / "grouped", docs=docs, queries=queries, qrels=[("q", "b1", 1)]))
    result = evaluate(ds, cached_hash, default_methods(with_ablations=False), progress=False)
    for ranked in result.outcomes[0].by_method.values():
        assert ranked.docs == ("b1",)


def test_eval_command_writes_tables_json_and_dump(tmp_path, capsys, monkeypatch):
    """The real local model, end to end through the CLI, on a five-document set."""
    from captain_memo.cli.main import main

    folder = write_set(tmp_path / "toy")
    out, dump = tmp_path / "eval.md", tmp_path / "dump.jsonl"
    code = main(
        [
            "eval",
            "--data",
            str(folder),
            "--json",
            "--out",
            str(out),
            "--dump",
            str(dump),
            "--cache",
            str(tmp_path / "cache"),
            "--no-ablations",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    (toy,) = report["sets"]
    assert toy["name"] == "toy" and toy["queries"] == 3
    methods = {row["method"] for row in toy["methods"]}
    assert methods == {"keyword leg only", "vector leg only", "legacy", "v2", "v3"}
    assert "| v3 |" in out.read_text() and "### toy" in out.read_text()
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert {line["query_id"] for line in lines} == {"q1", "q2", "q3"}
    assert lines[0]["methods"]["v2"]["docs"]


# -- the keyword query and the v3 fusion the measurements led to ---------------------------------


def test_words_joined_by_punctuation_also_match_alone(engine):
    from captain_memo.ranking.query import fts_match
    from captain_memo.store import NewMemory
    from captain_memo.store.search import keyword_leg

    alone = engine.remember(NewMemory(body="parametrize now accepts a trailing comma in argnames"))
    found = keyword_leg(engine.store, fts_match("fix(parametrize): trailing"), Scope(), 25)
    assert alone in {engine.store.chunk_rows([c])[c][1].id for c in found}


def test_an_identifier_is_one_phrase_unless_v3_asks_for_its_parts(engine):
    from captain_memo.ranking.query import fts_match
    from captain_memo.store import NewMemory
    from captain_memo.store.search import keyword_leg

    whole = engine.remember(NewMemory(body="use monkeypatch.setattr to replace the clock"))
    part = engine.remember(NewMemory(body="setattr on a frozen dataclass raises"))

    def memories(match):
        return {engine.store.chunk_rows([c])[c][1].id for c in keyword_leg(engine.store, match, Scope(), 25)}

    assert fts_match("monkeypatch.setattr") == '"monkeypatch.setattr"'
    assert memories(fts_match("monkeypatch.setattr")) == {whole}
    assert memories(fts_match("monkeypatch.setattr", identifier_parts=True)) == {whole, part}
    ranked = keyword_leg(engine.store, fts_match("monkeypatch.setattr", identifier_parts=True), Scope(), 25)
    best = max(ranked, key=ranked.get)
    assert engine.store.chunk_rows([best])[best][1].id == whole  # the whole identifier still ranks first


def test_v3_puts_both_legs_on_one_scale_and_weighs_them_equally(engine):
    from captain_memo.config import PROFILES
    from captain_memo.ranking.candidates import Candidate
    from captain_memo.ranking.union import union_fuse
    from captain_memo.store import NewMemory

    memory = engine.store.get(engine.remember(NewMemory(body="x")))
    pool = [
        Candidate(1, memory, "a", vector=0.90, bm25=2.0),  # best vector, weak keyword
        Candidate(2, memory, "b", vector=0.70, bm25=10.0),  # worst vector, best keyword
        Candidate(3, memory, "c", vector=0.85, bm25=8.0),  # both legs agree it is good
        Candidate(4, memory, "d", vector=0.80, bm25=None),
    ]  # no query term at all: bm25 0
    fused = {c.chunk_id: c.fused for c in union_fuse(pool, PROFILES["v3"], None)}
    assert fused[1] == pytest.approx(0.5 * 1.0 + 0.5 * 0.2)
    assert fused[2] == pytest.approx(0.5 * 0.0 + 0.5 * 1.0)
    assert fused[3] == pytest.approx(0.5 * 0.75 + 0.5 * 0.8)
    assert fused[4] == pytest.approx(0.5 * 0.5 + 0.0)
    assert max(fused, key=fused.get) == 3  # agreement beats either leg's lone favourite


def test_a_failing_leg_stops_the_evaluation_instead_of_skewing_it(tmp_path):
    """The embedder is made to fail (a fake: an outage cannot be produced on demand here)."""
    from fakes import failing

    from captain_memo.config import PROFILES
    from captain_memo.errors import RecallError
    from captain_memo.evaluation.runner import run_query

    ds = load(write_set(tmp_path / "toy"))
    inner = HashEmbedder()
    engine, doc_of = build_store(
        ds, CachedEmbedder(inner, EmbeddingCache(tmp_path / "c"), progress=False), tmp_path, progress=False
    )
    try:
        inner.fail = failing()
        v2 = Method("v2", PROFILES["v2"])  # the keyword leg still answers: recall itself would not raise
        with pytest.raises(RecallError, match="toy, query q1, v2: vector leg failed"):
            run_query(engine, ds, ds.queries[0], doc_of, [v2])
    finally:
        engine.close()
