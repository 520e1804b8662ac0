"""The team store's legs against the local store's on the same corpus: the keyword leg's bm25
equals FTS5's, the vector leg's nearest chunks and similarities equal sqlite-vec's exact ones."""

from __future__ import annotations

import numpy as np
import pytest

from captain_memo.ranking.query import fts_match, topic_match
from captain_memo.records import NewMemory
from captain_memo.store import Store
from captain_memo.store.search import (
    Scope,
    SqliteVecIndex,
    keyword_leg,
    keyword_scores,
    newest_matching,
    selective_match,
)

# Words repeated, stems shared (retry/retries/retrying), identifiers, dotted names, accents, a
# phrase that occurs twice, a long chunk and one-word chunks, in two projects and none.
TEXTS = [
    ("a", "We retry the payment gateway three times; retries back off exponentially."),
    ("a", "Retrying is wrong for the ledger: the ledger write is not idempotent."),
    ("a", "get_effective_contract_price rounds after the discount, not before."),
    ("a", "The function get_effective_contract_price lives in billing.price and is cached."),
    ("b", "Café menus are rendered with Jinja; the café's opening hours come from the API."),
    ("b", "retry retry retry: the flaky test retries until the fixture tears down."),
    ("b", "monkeypatch.setattr replaces the attribute; monkeypatch.undo restores it."),
    ("", "Personal note: the payment gateway sandbox resets every night."),
    ("", "ledger"),
    ("", "Invoices are archived after a year; the archive is read-only. " * 6),
    ("a", "The ledger write path: validate, write, then publish to the payment gateway."),
    ("b", "PYTEST_CURRENT_TEST is set while a test runs; the environment variable names the test."),
]
QUERIES = [
    "retry the payment gateway",
    "get_effective_contract_price",
    "billing.price cache",
    "monkeypatch.setattr undo",
    "café opening",
    "ledger write idempotent",
    "PYTEST_CURRENT_TEST environment",
    "archived invoices",
    "the",
    "nothing matches this zyzzyva",
]
SCOPES = [Scope("a"), Scope("b"), Scope(None), Scope(None, all_projects=True)]
DIM = 16


def vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = rng.normal(size=(n, DIM)).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def both_stores(team_db, db_file):
    """The same memories, chunks and vectors in a SQLite store and a team store."""
    from captain_memo.store.postgres import TeamStore

    local, team = Store(db_file), TeamStore(team_db.dsn())
    stored = vectors(len(TEXTS), seed=1)
    for store in (local, team):
        store.bind_model("test:random", DIM)
        for i, (project, text) in enumerate(TEXTS):
            store.add(NewMemory(body=text, project=project or None, created_at=1000.0 + i), [text], stored[i : i + 1])
    yield local, team
    local.close()
    team.close()


def same_ranking(team_hits: dict[int, float], local_hits: dict[int, float], ordered: bool = True) -> None:
    """Same chunks, same scores within float rounding, and (``ordered``) the same order, ties aside."""
    assert set(team_hits) == set(local_hits)
    for chunk_id, score in local_hits.items():
        assert team_hits[chunk_id] == pytest.approx(score, rel=1e-9, abs=1e-12)
    order = list(team_hits) if ordered else []
    for earlier, later in zip(order, order[1:]):
        assert local_hits[earlier] >= local_hits[later] - 1e-12


def test_bm25_equals_fts5(both_stores):
    local, team = both_stores
    compared = 0
    for query in QUERIES:
        for parts in (False, True):
            match = fts_match(query, parts)
            every = list(range(1, len(TEXTS) + 1))
            # Before the leg ran (every statistic counted) and after it (the leg's statistics reused).
            same_ranking(keyword_scores(team, match, every), keyword_scores(local, match, every), ordered=False)
            for scope in SCOPES:
                for k in (3, 25):
                    expected = keyword_leg(local, match, scope, k)
                    same_ranking(keyword_leg(team, match, scope, k), expected)
                    compared += len(expected)
            same_ranking(keyword_scores(team, match, every), keyword_scores(local, match, every), ordered=False)
    assert compared > 100  # the corpus and queries do match (a comparison of nothing proves nothing)


def test_common_words_are_left_out_alike(both_stores, monkeypatch):
    from captain_memo.ranking.query import STOPWORDS
    from captain_memo.store import search

    local, team = both_stores
    # The cut that keeps a large corpus fast (selective_match), at this corpus's size.
    monkeypatch.setattr(search, "COMMON_PHRASE_FLOOR", 2)
    monkeypatch.setattr(search, "COMMON_PHRASE_SHARE", 0.0)
    for query in QUERIES:
        match = fts_match(query)
        assert selective_match(team, match, STOPWORDS) == selective_match(local, match, STOPWORDS)


def test_newest_of_a_topic_alike(both_stores):
    local, team = both_stores
    for store in (local, team):
        for day, text in enumerate(["ledger: fix rounding", "ledger rounding again", "rounding in the ledger"]):
            store.add(NewMemory(body=text, kind="observation", project="a", created_at=5000.0 + day), [text], None)
    for query in ("latest ledger rounding", "latest ledger change", "latest café"):
        for scope in SCOPES:
            assert newest_matching(team, topic_match(query), scope, 2) == newest_matching(
                local, topic_match(query), scope, 2
            )


def test_curated_text_and_observations_take_their_places_apart_alike(both_stores):
    local, team = both_stores
    for store in (local, team):
        for i in range(6):
            text = f"retry the payment gateway call, attempt {i}"
            store.add(NewMemory(body=text, kind="observation", project="a", created_at=6000.0 + i), [text], None)
    for query in ("retry the payment gateway", "ledger write", "nothing matches this zyzzyva"):
        match = fts_match(query, True)
        for scope in SCOPES:
            expected = keyword_leg(local, match, scope, 2, per_kind=True)
            same_ranking(keyword_leg(team, match, scope, 2, per_kind=True), expected, ordered=False)
            observed = local.observation_chunks(list(expected))
            assert observed == team.observation_chunks(list(expected)) and len(observed) <= 2
            assert len(expected) - len(observed) <= 2
    kept = keyword_leg(local, fts_match("retry the payment gateway", True), Scope("a"), 2, per_kind=True)
    assert len(kept) == 4 and len(local.observation_chunks(list(kept))) == 2, "two of each kind"


def test_vector_leg_equals_sqlite_vec_exact(both_stores):
    from captain_memo.store.postgres.vectors import PgVectorIndex

    local, team = both_stores
    exact, pg = SqliteVecIndex(local), PgVectorIndex(team)
    for query in vectors(8, seed=2):
        for scope in SCOPES:
            for k in (1, 5, 50):
                expected = exact.knn(query, scope, k)
                found = pg.knn(query, scope, k)
                assert list(found) == list(expected)
                assert list(found.values()) == pytest.approx(list(expected.values()), abs=1e-6)
        ids = [1, 3, 5, 7, 999]
        assert pg.similarities(query, ids) == pytest.approx(exact.similarities(query, ids), abs=1e-6)


def test_hnsw_ef_search_is_at_least_the_clients_and_a_larger_database_default_stands(team_db):
    from captain_memo.store.postgres import TeamStore

    def ef_search() -> int:
        store = TeamStore(team_db.dsn())
        try:
            return int(store.one("SHOW hnsw.ef_search")[0])
        finally:
            store.close()

    assert ef_search() == 100
    team_db.execute(f'ALTER DATABASE "{team_db.name}" SET hnsw.ef_search = 400')
    assert ef_search() == 400
    team_db.execute(f'ALTER DATABASE "{team_db.name}" SET hnsw.ef_search = 20')
    assert ef_search() == 100


# Commits beside the docs, sharing their words: with them the whole corpus's statistics differ from
# curated text's (the docs' "payment", "gateway", "ledger" are common among commits).
OBSERVATIONS = [
    ("a", "retry the payment gateway call again"),
    ("a", "ledger: fix the ledger write path"),
    ("a", "payment gateway timeout raised"),
    ("b", "the flaky retry test is fixed"),
    ("", "ledger ledger ledger"),
]
CURATED_QUERIES = ["retry the payment gateway", "ledger write idempotent", "café opening", "the", "zyzzyva"]


def add_observations(stores) -> None:
    for store in stores:
        for i, (project, text) in enumerate(OBSERVATIONS):
            memory = NewMemory(body=text, kind="observation", project=project or None, created_at=7000.0 + i)
            store.add(memory, [text], None)


def same_curated_ranking(team, local) -> int:
    """The curated leg and scores of both stores alike, alone and as store/search.py uses them (per
    kind, curated text with its own statistics); how many hits were compared."""
    compared = 0
    every = list(range(1, len(TEXTS) + len(OBSERVATIONS) + 1))
    team._statistics.clear()  # a recent query's statistics serve for 2 s (keyword.py), writes or not
    for query in CURATED_QUERIES:
        for parts in (False, True):
            match = fts_match(query, parts)
            # Before the leg ran (every statistic counted) and after it (the leg's statistics reused).
            same_ranking(team.curated_keyword_scores(match, every), local.curated_keyword_scores(match, every), False)
            for scope in SCOPES:
                for k in (3, 25):
                    expected = local.curated_keyword_leg(match, scope, k)
                    same_ranking(team.curated_keyword_leg(match, scope, k), expected)
                    compared += len(expected)
                expected = keyword_leg(local, match, scope, 3, per_kind=True, curated_statistics=True)
                same_ranking(keyword_leg(team, match, scope, 3, True, True), expected, ordered=False)
            same_ranking(team.curated_keyword_scores(match, every), local.curated_keyword_scores(match, every), False)
            same_ranking(keyword_scores(team, match, every, True), keyword_scores(local, match, every, True), False)
    return compared


def counted_alike(team_db) -> None:
    """Each project's counts, whole and curated, and each posting's mark are those of a recount."""
    kept = team_db.execute(
        "SELECT project, chunks, tokens, curated_chunks, curated_tokens FROM corpus_stats WHERE chunks > 0"
        " ORDER BY project"
    )
    recount = team_db.execute(
        "SELECT c.project, count(*), sum(cardinality(c.terms)), count(*) FILTER (WHERE m.kind <> 'observation'),"
        " coalesce(sum(cardinality(c.terms)) FILTER (WHERE m.kind <> 'observation'), 0)"
        " FROM chunks c JOIN memories m ON m.id = c.memory_id GROUP BY c.project ORDER BY c.project"
    )
    assert kept == recount
    assert team_db.execute(
        "SELECT count(*) FROM chunk_terms t JOIN chunks c ON c.id = t.chunk_id JOIN memories m ON m.id = c.memory_id"
        " WHERE t.curated <> (m.kind <> 'observation') OR c.curated <> (m.kind <> 'observation')"
    ) == [(0,)]


def test_curated_bm25_equals_fts5_over_curated_text_alone(both_stores, team_db):
    local, team = both_stores
    add_observations((local, team))
    assert same_curated_ranking(team, local) > 50
    counted_alike(team_db)
    # The two sets of statistics do differ here, so the comparison above says something.
    match = fts_match("retry the payment gateway")
    assert local.curated_keyword_scores(match, [1]) != pytest.approx(local.keyword_scores(match, [1]))


def test_curated_statistics_follow_a_kind_change_and_a_delete(both_stores, team_db, tmp_path):
    """A doc made an observation and a commit made a note (members may change a kind), then a
    memory deleted: the team store scores as a local store that held the final kinds from the start."""
    local, team = both_stores
    add_observations((team,))
    team_db.execute("UPDATE memories SET kind = 'observation' WHERE id IN (1, 8)")
    team_db.execute("UPDATE memories SET kind = 'skill' WHERE id = %s", (len(TEXTS) + 2,))
    team_db.execute("UPDATE memories SET kind = 'memory' WHERE id = 2")  # a kind within curated text: no move
    counted_alike(team_db)
    reference = Store(tmp_path / "reference.db")
    for i, (project, text) in enumerate(TEXTS + OBSERVATIONS):
        kind = "observation" if i + 1 in (1, 8) or (i >= len(TEXTS) and i != len(TEXTS) + 1) else "memory"
        reference.add(NewMemory(body=text, kind=kind, project=project or None, created_at=1000.0 + i), [text], None)
    assert same_curated_ranking(team, reference) > 50
    for store in (team, reference):
        store.delete(len(TEXTS) + 2)  # the commit made a note
        store.delete(8)  # the note made an observation
        store.delete(11)  # a note
    counted_alike(team_db)
    assert same_curated_ranking(team, reference) > 30
    reference.close()


def test_a_store_made_before_curated_statistics_gets_them_in_place(team_db, db_file, monkeypatch):
    """A team store at version 3 holding notes and commits: the owner's next connection marks the
    curated postings and counts them, and the store then scores as the local store does."""
    from captain_memo.store.postgres import TeamStore, schema

    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:3])
    monkeypatch.setattr(schema, "LATEST", 3)
    old, local = TeamStore(team_db.dsn()), Store(db_file)
    for store in (old, local):
        for i, (project, text) in enumerate(TEXTS):
            store.add(NewMemory(body=text, project=project or None, created_at=1000.0 + i), [text], None)
    add_observations((old, local))
    old.close()
    monkeypatch.undo()
    team = TeamStore(team_db.dsn())
    assert team_db.execute("SELECT max(version) FROM schema_version") == [(schema.LATEST,)]
    counted_alike(team_db)
    assert same_curated_ranking(team, local) > 50
    team.close()
    local.close()


def test_a_chunk_saved_during_a_kind_change_takes_the_new_kind(team_db):
    """A chunk saved while another transaction makes its memory an observation waits for that
    change and is counted as an observation's: before, it read the kind the change had not yet
    committed and stayed counted as curated text under an observation."""
    import threading

    import psycopg

    from captain_memo.store.postgres import TeamStore

    team = TeamStore(team_db.dsn())
    memory_id = team.add(NewMemory(body="a note", project="a"), ["a note"], None)
    team.close()
    with psycopg.connect(team_db.dsn()) as changing:
        changing.execute("UPDATE memories SET kind = 'observation' WHERE id = %s", (memory_id,))
        saved = threading.Event()

        def save() -> None:
            team_db.execute(
                "INSERT INTO chunks (memory_id, project, seq, text, content_hash, terms)"
                " VALUES (%s, 'a', 1, 'more of it', 'h', ARRAY['more', 'of', 'it'])",
                (memory_id,),
            )
            saved.set()

        saver = threading.Thread(target=save)
        saver.start()
        # The save waits on the memory's row: the change has not committed yet.
        waiting = (
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO chunks%%'"
        )
        while not saved.is_set() and team_db.execute(waiting) == [(0,)]:
            saved.wait(0.01)
        changing.commit()
    saver.join()
    counted_alike(team_db)
    assert team_db.execute("SELECT curated_chunks, chunks FROM corpus_stats WHERE project = 'a'") == [(0, 2)]
