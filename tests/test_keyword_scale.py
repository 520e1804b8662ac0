"""The keyword leg's two changes for large stores: ranking before the scope lookup, and leaving
out phrases too common to be worth scoring."""

from __future__ import annotations

import pytest

from captain_memo.ranking.query import STOPWORDS, fts_match
from captain_memo.store import NewMemory, Store, search
from captain_memo.store.search import Scope, keyword_leg, selective_match

# The scoped keyword leg as it was written before: every hit joined to its memory, then ranked.
JOINED = (
    "WITH hits AS MATERIALIZED (SELECT rowid AS chunk_id, bm25(chunks_fts) AS rank FROM chunks_fts"
    " WHERE chunks_fts MATCH ?) SELECT h.chunk_id, h.rank FROM hits h JOIN chunks c ON c.id = h.chunk_id"
    " JOIN memories m ON m.id = c.memory_id WHERE m.project IS NULL OR m.project = ? ORDER BY h.rank LIMIT ?"
)


@pytest.fixture
def store(db_file):
    s = Store(db_file)
    for i in range(150):
        # "deploy" is everywhere; "cache" in every third note; "zebra" in five; "tiny" has 3 notes.
        project = "tiny" if i in (7, 70, 140) else ("big" if i % 5 else None)
        words = [
            "the deploy step",
            "cache" if i % 3 == 0 else "queue",
            "zebra" if i % 30 == 0 else "lion",
            "deploy " * (i % 4),
        ]
        s.add(NewMemory(body=" ".join(words), project=project), [" ".join(words) + f" note {i}"], None)
    yield s
    s.close()


@pytest.mark.parametrize("project", ["big", "tiny", None, "nowhere"])
@pytest.mark.parametrize("query", ["deploy", "cache zebra", "the lion note 7"])
def test_scoped_leg_ranks_as_the_joined_query_did(store, project, query):
    match = fts_match(query)
    for k in (1, 3, 25):
        expected = [(cid, -rank) for cid, rank in store.conn.execute(JOINED, (match, project, k))]
        found = keyword_leg(store, match, Scope(project), k)
        assert sorted(found.items(), key=lambda item: (-item[1], item[0])) == sorted(
            expected, key=lambda item: (-item[1], item[0])
        )


def test_a_small_projects_hits_deep_in_the_ranking_are_found(store):
    found = keyword_leg(store, fts_match("deploy"), Scope("tiny"), 100)
    projects = dict(store.conn.execute("SELECT c.id, m.project FROM chunks c JOIN memories m ON m.id = c.memory_id"))
    assert len(found) == 3 + sum(1 for p in projects.values() if p is None)  # tiny's 3 plus personal notes
    assert {projects[c] for c in found} == {"tiny", None}


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setattr(search, "COMMON_PHRASE_FLOOR", 20)
    monkeypatch.setattr(search, "COMMON_PHRASE_SHARE", 0.0)


def test_common_phrases_are_left_out_when_a_rarer_one_is_there(store, small_limits):
    assert selective_match(store, fts_match("the cache zebra"), STOPWORDS) == '"zebra"'  # 150, 50 and 5 notes
    assert selective_match(store, fts_match("zebra"), STOPWORDS) == '"zebra"'
    assert selective_match(store, fts_match("the deploy"), STOPWORDS) == '"deploy"'  # all common: not a stopword
    assert selective_match(store, fts_match("the queue deploy cache"), STOPWORDS) == '"cache"'  # all common: the rarest
    assert selective_match(store, fts_match("the"), STOPWORDS) == '"the"'
    assert selective_match(store, None, STOPWORDS) is None


def test_nothing_is_left_out_of_a_small_store(store):
    # 150 chunks, far below the 5,000 a phrase must exceed: the query is untouched.
    match = fts_match("the cache zebra")
    assert selective_match(store, match, STOPWORDS) == match


def test_recall_searches_the_selective_phrases(db_file, hash_embedder, small_limits):
    from captain_memo.engine.core import Engine

    engine = Engine(Store(db_file), hash_embedder)
    for i in range(60):
        engine.remember(NewMemory(body=f"the deploy note {i}" + (" zebra crossing" if i % 20 == 0 else "")))
    result = engine.recall("the zebra", limit=50, record=False)
    keyword_hits = [h for h in result.hits if h.bm25 is not None]
    assert len(keyword_hits) == 3 and all("zebra" in h.text for h in keyword_hits)
    engine.close()
