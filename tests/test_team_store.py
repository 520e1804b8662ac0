"""The team store on a real PostgreSQL with pgvector: migrations, the model binding, connection
strings kept out of errors, and the engine running on it unchanged."""

from __future__ import annotations

import pytest
from fakes import HashEmbedder

from captain_memo.errors import NotFoundError, ReadOnlyStoreError, StoreError
from captain_memo.records import NewMemory


def team_store(team_db, role: str = "postgres"):
    from captain_memo.store.postgres import TeamStore

    return TeamStore(team_db.dsn(role))


def team_engine(store, embedder):
    from captain_memo.engine.core import Engine
    from captain_memo.store.postgres.vectors import PgVectorIndex

    return Engine(store, embedder, vector_index=PgVectorIndex(store))


# How closely the two stores' scores can agree: both hold the same float32 unit vectors, but
# sqlite-vec and pgvector sum a distance's 384 float32 terms in their own order, each within
# 384 unit roundoffs (2**-24) of the exact sum; the ranking scales that similarity by factors near 1.
# Measured: at most 5.5e-6 apart relatively, 5e-7 absolutely. Rounding both to 5 decimals was not
# a tolerance: -0.400545 rounds apart from -0.4005449999 (it failed so on a busy machine's CI).
SCORE_TOLERANCE = 384 * 2**-24  # 2.3e-5


def same_hits(shared, local) -> None:
    """The same hits with the same scores to float32 precision, each store's order descending in
    the other's scores wherever those differ by more than that (hits closer than it may swap)."""
    theirs = {h.memory.title: h.score for h in shared.hits}
    mine = {h.memory.title: h.score for h in local.hits}
    assert len(theirs) == len(shared.hits) and sorted(theirs) == sorted(mine)
    for title, score in mine.items():
        assert theirs[title] == pytest.approx(score, rel=SCORE_TOLERANCE, abs=SCORE_TOLERANCE), title
    for result, scores in ((shared, mine), (local, theirs)):
        order = [scores[h.memory.title] for h in result.hits]
        assert all(
            earlier >= later or earlier == pytest.approx(later, rel=SCORE_TOLERANCE, abs=SCORE_TOLERANCE)
            for earlier, later in zip(order, order[1:])
        ), [h.memory.title for h in result.hits]


def test_migrations_are_recorded_once(team_db):
    team_store(team_db).close()
    team_store(team_db).close()
    from captain_memo.store.postgres.schema import MIGRATIONS

    rows = team_db.execute("SELECT version FROM schema_version ORDER BY version")
    assert rows == [(m.version,) for m in MIGRATIONS]
    tables = {name for (name,) in team_db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert {"memories", "chunks", "grants", "team_meta", "corpus_stats", "schema_version"} <= tables


def test_a_newer_schema_is_read_but_never_written(team_db):
    from captain_memo.store.postgres.schema import LATEST

    store = team_store(team_db)
    memory_id = store.add(NewMemory(body="kept as it is", project="p"), ["kept as it is"], None)
    store.close()
    team_db.execute("INSERT INTO schema_version (version, name) VALUES (99, 'from a newer client')")
    old_client = team_store(team_db)
    assert old_client.get(memory_id).body == "kept as it is"
    with pytest.raises(ReadOnlyStoreError) as refused:
        old_client.add(NewMemory(body="lost?", project="p"), ["lost?"], None)
    assert "schema version 99" in str(refused.value) and f"version {LATEST} " in str(refused.value)
    with pytest.raises(ReadOnlyStoreError):
        old_client.delete(memory_id)
    old_client.close()
    assert team_db.execute("SELECT count(*) FROM memories") == [(1,)]


def test_a_member_cannot_migrate_and_is_told_who_can(team_db):
    with pytest.raises(StoreError) as refused:
        team_store(team_db, "alice")
    assert "schema version 0" in str(refused.value) and "owner" in str(refused.value)


def test_the_engine_runs_on_the_team_store_as_on_sqlite(team_db, local_engine):
    """The same memories through the same engine: the same hits and scores in every profile (the
    real model: the hash embedder's many exact ties would let the two stores list tied hits apart)."""
    engine = local_engine
    embedder = engine.embedder
    team = team_engine(team_store(team_db), embedder)
    notes = [
        ("Retry policy", "We retry the payment gateway three times with exponential backoff."),
        ("Contract price", "get_effective_contract_price applies the discount before rounding."),
        ("Rounding money", "Keep every decimal place until the invoice total, then round half-even."),
        ("Deploys", "Deploys go out on Tuesdays; the payment service is deployed last."),
        ("Caching", "The price cache expires after five minutes; retry on a miss."),
    ]
    for title, body in notes:
        for eng in (engine, team):
            eng.remember(NewMemory(body=body, title=title, project="shop"))
    for profile in ("v3", "v2", "legacy"):
        for query in ("retry the payment", "get_effective_contract_price", "rounding of the invoice total"):
            local = engine.recall(query, project="shop", profile=profile, record=False)
            shared = team.recall(query, project="shop", profile=profile, record=False)
            assert not shared.failures
            same_hits(shared, local)
    team.close()


def test_writes_reads_and_supersession(team_db, hash_embedder):
    team = team_engine(team_store(team_db), hash_embedder)
    old = team.remember(NewMemory(body="Releases are cut on Fridays.", title="Releases", project="p"))
    new = team.remember(NewMemory(body="Releases are cut on Mondays now.", title="Releases", project="p"))
    team.supersede(old, new)
    assert team.store.superseded()[0].new_id == new
    assert team.unsupersede(old) == new
    assert team.store.find_by_hash(team.store.get(old).content_hash, "p") == old
    assert [m.id for m in team.store.list_memories("p", all_projects=False)] == [new, old]
    team.forget(old)
    with pytest.raises(NotFoundError):
        team.store.get(old)
    counts = team.store.counts()
    assert (counts["memories"], counts["chunks"], counts["vectors"], counts["pending_vectors"]) == (1, 1, 1, 0)
    # bm25's statistics follow the chunks a forgotten memory took with it.
    assert team.store.chunk_estimate() == 1
    assert team.store.fetch("SELECT count(DISTINCT chunk_id) FROM chunk_terms") == [(1,)]
    team.close()


def test_another_model_loses_only_the_vector_leg(team_db):
    team = team_engine(team_store(team_db), HashEmbedder(model_id="team:model"))
    team.remember(NewMemory(body="The billing queue is drained nightly.", title="Billing", project="p"))
    team.close()
    other = team_engine(team_store(team_db), HashEmbedder(model_id="my:model"))
    result = other.recall("billing queue", project="p", record=False)
    assert [h.memory.title for h in result.hits] == ["Billing"]
    assert "CAPTAIN_MEMO_EMBED_MODEL" in result.failures["vector"] and "team:model" in result.failures["vector"]
    # Its text is kept for keyword search; its vectors wait for a client with the team's model.
    memory_id = other.remember(NewMemory(body="Invoices are archived after a year.", project="p"))
    assert other.store.missing_vectors(memory_id) == 1
    other.close()


def test_a_connection_string_never_shows_in_errors(pg_server):
    from captain_memo.store.postgres import TeamStore

    password = "s3cret-Pass"
    for dsn in (
        pg_server.dsn("no_such_database", "alice", password),
        f"postgresql://alice:{password}@127.0.0.1:1/team?connect_timeout=1",
        f"postgresql://alice:{password}@127.0.0.1:notaport/team",
    ):
        with pytest.raises(StoreError) as failed:
            TeamStore(dsn)
        text = str(failed.value)
        assert password not in text and dsn not in text
        assert failed.value.__cause__ is None and failed.value.__suppress_context__
        assert "***" in text or "<" in text


# -- row-level security, tried through SQL as the members themselves ------------------------------


@pytest.fixture
def shared_projects(team_db):
    """alice reads and writes project a, bob project b; carol curates a. One memory each by alice
    and bob, written through the store as themselves."""
    team_store(team_db).close()  # the owner migrates
    team_db.grant("alice", "a")
    team_db.grant("bob", "b")
    team_db.grant("carol", "a", curate=True)
    ids = {}
    for role, project in (("alice", "a"), ("bob", "b")):
        store = team_store(team_db, role)
        ids[role] = store.add(NewMemory(body=f"{role}'s decision", project=project), [f"{role}'s decision"], None)
        store.close()
    return team_db, ids


def test_a_role_reads_only_the_projects_it_is_granted(shared_projects):
    team_db, ids = shared_projects
    assert team_db.execute("SELECT id, author FROM memories", role="bob") == [(ids["bob"], "bob")]
    assert team_db.execute("SELECT text FROM chunks", role="bob") == [("bob's decision",)]
    assert team_db.execute("SELECT project FROM corpus_stats", role="bob") == [("b",)]
    assert team_db.execute("SELECT DISTINCT project FROM chunk_terms", role="bob") == [("b",)]
    assert team_db.execute("SELECT role, project FROM grants", role="bob") == [("bob", "b")]
    # Not by asking for it, nor by id.
    assert team_db.execute("SELECT id FROM memories WHERE project = 'a'", role="bob") == []
    assert team_db.execute("SELECT id FROM memories WHERE id = %s", (ids["alice"],), role="bob") == []


def test_a_role_cannot_change_another_roles_memory(shared_projects):
    import psycopg

    team_db, ids = shared_projects
    team_db.grant("bob", "a")  # bob now reads project a, but did not write alice's memory
    assert len(team_db.execute("SELECT id FROM memories", role="bob")) == 2
    alice = ids["alice"]
    for sql in (
        "UPDATE memories SET body = 'rewritten' WHERE id = %s RETURNING id",
        "UPDATE memories SET superseded_by = id WHERE id = %s RETURNING id",
        "DELETE FROM memories WHERE id = %s RETURNING id",
        "DELETE FROM chunks WHERE memory_id = %s RETURNING id",
        "UPDATE chunks SET seq = 5 WHERE memory_id = %s RETURNING id",
    ):
        assert team_db.execute(sql, (alice,), role="bob") == [], sql
    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # no role rewrites an author
        team_db.execute("UPDATE memories SET author = 'bob' WHERE id = %s", (ids["bob"],), role="bob")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # nor writes as another role
        team_db.execute(
            "INSERT INTO memories (kind, body, created_at, updated_at, project, author, content_hash)"
            " VALUES ('memory', 'forged', 0, 0, 'a', 'alice', 'x')",
            role="bob",
        )
    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # nor grants itself a project
        team_db.execute("INSERT INTO grants (role, project) VALUES ('bob', 'secret')", role="bob")
    assert team_db.execute("SELECT body, author FROM memories WHERE id = %s", (alice,)) == [
        ("alice's decision", "alice")
    ]
    # Through the store the refusal is one line naming the author.
    store = team_store(team_db, "bob")
    with pytest.raises(StoreError, match="written by alice"):
        store.delete(alice)
    store.close()


def test_a_curator_changes_any_memory_of_its_project_only(shared_projects):
    team_db, ids = shared_projects
    changed = "UPDATE memories SET title = 'curated' WHERE id = %s RETURNING id"
    assert team_db.execute(changed, (ids["alice"],), role="carol") == [(ids["alice"],)]
    assert team_db.execute(changed, (ids["bob"],), role="carol") == []
    # The author keeps the right to change its own memory.
    assert team_db.execute(changed, (ids["alice"],), role="alice") == [(ids["alice"],)]


def test_bulk_load_keeps_ids_statistics_and_index(team_db):
    import numpy as np

    store = team_store(team_db)
    store.bind_model("test:random", 4)
    first = store.add(NewMemory(body="before the load", project="p"), ["before the load"], np.ones((1, 4)) / 2)
    rows = [
        (NewMemory(body=f"note {i}", project="p", created_at=10.0 + i), [f"note {i}", "retry"], np.eye(4)[[i % 4, 0]])
        for i in range(50)
    ]
    store.bulk_load(rows, without_index=True)
    store.build_vector_index()
    after = store.add(NewMemory(body="after the load", project="p"), ["after the load"], None)
    assert after == first + 51  # the id sequence follows the loaded ids: none is handed out twice
    assert store.counts()["chunks"] == 1 + 100 + 1
    assert team_db.execute("SELECT chunks, tokens FROM corpus_stats") == [(102, 3 + 100 + 50 + 3)]
    assert team_db.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'chunks_embedding'") == [(1,)]
    store.close()


def test_a_note_rewritten_keeps_its_unchanged_chunks(team_db):
    """Notes indexed from a repository's folders are rewritten in place, as in the local store."""
    import numpy as np

    store = team_store(team_db)
    store.bind_model("test:random", 2)
    note = NewMemory(body="one\n\ntwo", project="p", source_key="doc/adr/1.md#intro")
    memory_id = store.add(note, ["one", "two"], np.array([[1.0, 0.0], [0.0, 1.0]]))
    kept = {c.text: c.id for c in store.chunks_of(memory_id)}
    assert list(store.stored_by_key("p", "doc/adr/")) == ["doc/adr/1.md#intro"]
    inserted = store.rewrite(memory_id, NewMemory(body="two\n\nthree", project="p"), ["two", "three"], None)
    assert inserted == 1
    chunks = store.chunks_of(memory_id)
    assert [(c.seq, c.text) for c in chunks] == [(0, "two"), (1, "three")]
    assert chunks[0].id == kept["two"] and store.missing_vectors(memory_id) == 1
    assert team_db.execute("SELECT sum(chunks), sum(tokens) FROM corpus_stats") == [(2, 2)]
    store.save_file_states("p", {"doc/adr/1.md": ("digest", 2)}, [])
    assert store.file_states("p") == {"doc/adr/1.md": ("digest", 2)}
    store.save_file_states("p", {}, ["doc/adr/1.md"])
    assert store.file_states("p") == {}
    store.close()


def test_stored_vectors_read_back_for_an_audit(team_db):
    import numpy as np

    store = team_store(team_db)
    store.bind_model("test:random", 3)
    stored = np.random.default_rng(3).normal(size=(9, 3)).astype(np.float32)
    for i in range(9):
        store.add(NewMemory(body=f"chunk {i}"), [f"chunk {i}"], stored[i : i + 1])
    sample = store.sample_vectors(3)
    assert [text for _, text, _ in sample] == ["chunk 0", "chunk 3", "chunk 6"]
    for chunk_id, _, vector in sample:
        assert np.array_equal(vector, stored[chunk_id - 1])  # float32 written and read back bit for bit
    store.close()


def test_a_slow_statement_fails_within_the_timeout(team_db):
    store = team_store(team_db)
    store.close()
    from captain_memo.store.postgres import TeamStore

    slow = TeamStore(team_db.dsn(), timeout_s=0.3)
    # PostgreSQL's own "canceling statement due to statement timeout": the server ended the
    # statement at 0.3 s (a statement that ran its 5 s would have returned a row, not failed).
    with pytest.raises(StoreError, match="statement timeout"):
        slow.fetch("SELECT pg_sleep(5)")
    assert slow.memory_count() == 0  # the next statement runs on a reconnected or same connection
    slow.close()


def test_clients_opening_a_new_store_at_once_migrate_it_once(team_db):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: team_store(team_db), range(4)))
    from captain_memo.store.postgres.schema import LATEST

    assert team_db.execute("SELECT max(version), count(*) FROM schema_version") == [(LATEST, LATEST)]
    for store in stores:
        store.close()


def test_what_the_service_and_the_audit_read(team_db):
    store = team_store(team_db)
    store.add(NewMemory(body="waiting for a vector", project="p"), ["waiting for a vector"], None)
    assert store.pending_count() == 1 == store.counts()["pending_vectors"]
    assert store.table_exists(store.vec_table) and not store.table_exists("no_such_table")
    store.close()
