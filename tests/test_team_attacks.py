"""The team store attacked from the inside: a member role with a psql prompt (a real login role on
a real PostgreSQL, speaking SQL) tries to become the owner, to block the others' saves, and to
stall them. Each attack here worked before the store defended against it."""

from __future__ import annotations

import pytest

from captain_memo.records import NewMemory


def team_store(team_db, role: str = "postgres"):
    from captain_memo.store.postgres import TeamStore

    return TeamStore(team_db.dsn(role))


@pytest.fixture
def granted(team_db):
    """A migrated store; alice writes project a, bob project b; the owner keeps a secret project."""
    owner = team_store(team_db)
    owner.add(NewMemory(body="the owner's secret", project="secret"), ["the owner's secret"], None)
    owner.close()
    team_db.grant("alice", "a")
    team_db.grant("bob", "b")
    return team_db


def as_member(team_db, role: str, statements: list[str]) -> None:
    """Run statements in one session of ``role``, as a member at a psql prompt would."""
    import psycopg

    with psycopg.connect(team_db.dsn(role), autocommit=True) as conn:
        for sql in statements:
            try:
                conn.execute(sql)
            except psycopg.Error:
                pass  # refused: the attack goes on with its next step, as a person's would


def test_every_definer_function_runs_on_a_pinned_search_path(granted):
    """What the store's owner runs for members (SECURITY DEFINER) and every trigger function resolve
    names on a path of their own, the caller's temporary schema last."""
    rows = granted.execute(
        "SELECT p.oid::regprocedure::text, p.prosecdef, coalesce(p.proconfig, '{}') FROM pg_proc p"
        " WHERE p.pronamespace = current_schema()::regnamespace"
        " AND (p.prosecdef OR p.prorettype = 'trigger'::regtype)"
    )
    assert len(rows) >= 3  # the bm25 counters and the model binding
    for name, _, config in rows:
        paths = [setting.split("=", 1)[1] for setting in config if setting.startswith("search_path=")]
        assert paths, f"{name} has no search_path of its own"
        path = [part.strip() for part in paths[0].split(",")]
        assert path[0] == "pg_catalog" and path[-1] == "pg_temp", f"{name}: search_path {paths[0]}"
        assert "$user" not in paths[0], name


def test_a_temporary_view_does_not_run_as_the_owner(granted):
    """alice shadows team_meta with a temporary view calling her function, then calls the owner's
    model binding: before, her function ran as the owner and granted her every project."""
    as_member(
        granted,
        "alice",
        [
            "CREATE FUNCTION pg_temp.take() RETURNS text LANGUAGE sql AS"
            " $$ INSERT INTO public.grants (role, project, curate) VALUES ('alice', 'secret', true) RETURNING 'x' $$",
            "CREATE TEMP VIEW team_meta AS SELECT 'embed_model'::text AS key, pg_temp.take() AS value",
            "SELECT captain_memo_bind_model('m', 3)",
        ],
    )
    assert granted.execute("SELECT role, project FROM grants WHERE role = 'alice'") == [("alice", "a")]
    assert granted.execute("SELECT body FROM memories", role="alice") == []


def test_a_temporary_table_with_a_trigger_does_not_run_as_the_owner(granted):
    """alice shadows chunk_terms with a temporary table whose trigger grants her a project, then
    saves a chunk so the owner's bm25 counter writes to it: before, the trigger ran as the owner."""
    import psycopg

    with psycopg.connect(granted.dsn("alice"), autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE chunk_terms (term text, chunk_id bigint, project text, tf int, size int)")
        conn.execute(
            "CREATE FUNCTION pg_temp.take() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " INSERT INTO public.grants (role, project, curate) VALUES ('alice', 'secret', true)"
            " ON CONFLICT DO NOTHING; RETURN NULL; END $$"
        )
        conn.execute("CREATE TRIGGER take AFTER INSERT ON pg_temp.chunk_terms EXECUTE FUNCTION pg_temp.take()")
        save_note_of_her_own(conn, ["mine"])
    assert granted.execute("SELECT role, project FROM grants WHERE role = 'alice'") == [("alice", "a")]
    assert granted.execute("SELECT body FROM memories WHERE project = 'secret'", role="alice") == []
    # The real postings were written where they belong.
    assert granted.execute("SELECT term FROM chunk_terms WHERE chunk_id IN (SELECT id FROM chunks WHERE project = 'a')")


def test_a_member_cannot_choose_ids_and_block_the_others_saves(granted):
    """alice inserts rows with ids just ahead of the sequence: before, bob's next saves failed on
    the primary key. Now an id is the store's to choose."""
    import psycopg

    ahead = granted.execute("SELECT coalesce(max(id), 0) FROM memories")[0][0]
    for sql in (
        "INSERT INTO memories (id, kind, body, created_at, updated_at, project, content_hash)"
        f" SELECT i, 'memory', 'squat', 0, 0, 'a', 'h' FROM generate_series({ahead + 1}, {ahead + 20}) i",
        "INSERT INTO memories (id, kind, body, created_at, updated_at, project, content_hash) OVERRIDING SYSTEM VALUE"
        f" SELECT i, 'memory', 'squat', 0, 0, 'a', 'h' FROM generate_series({ahead + 21}, {ahead + 40}) i",
        f"INSERT INTO chunks (id, memory_id, project, seq, text, content_hash, terms) VALUES ({ahead + 1}, 1, 'a', 0,"
        " 'x', 'h', '{}')",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            granted.execute(sql, role="alice")
    bob = team_store(granted, "bob")
    saved = [bob.add(NewMemory(body=f"bob's note {i}", project="b"), [f"bob's note {i}"], None) for i in range(3)]
    bob.close()
    assert len(set(saved)) == 3
    assert granted.execute("SELECT count(*) FROM memories WHERE body = 'squat'") == [(0,)]


def test_a_store_made_before_the_fix_is_mended_by_its_next_migration(team_db, monkeypatch):
    """A store at version 1 (definer functions on the caller's path, ids open to members) with
    rows in it: the owner's next connection pins the paths and closes the ids, the rows kept."""
    import numpy as np

    from captain_memo.store.postgres import TeamStore, schema

    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:1])
    monkeypatch.setattr(schema, "LATEST", 1)
    old = TeamStore(team_db.dsn())
    kept = old.add(NewMemory(body="written at version 1", project="a"), ["written at version 1"], None)
    old.close()
    monkeypatch.undo()
    TeamStore(team_db.dsn()).close()
    assert team_db.execute("SELECT max(version) FROM schema_version") == [(schema.LATEST,)]
    unpinned = team_db.execute(
        "SELECT p.proname FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace"
        " AND p.prosecdef AND NOT coalesce(p.proconfig::text LIKE '%%search_path=pg_catalog%%pg_temp%%', false)",
        (),
    )
    assert unpinned == []
    team_db.grant("alice", "a")
    alice = TeamStore(team_db.dsn("alice"))
    alice.bind_model("test:random", 2)  # recorded with her first vectors, by the owner's function on its pinned path
    added = alice.add(NewMemory(body="written after", project="a"), ["written after"], np.ones((1, 2)) / 2)
    assert alice.bound_model() == ("test:random", 2)
    assert alice.get(kept).body == "written at version 1" and added > kept
    alice.close()


def test_a_member_cannot_write_the_curated_counts_or_marks(granted):
    """alice tries to make her words weigh more in curated text's statistics by writing its counts,
    a chunk's or a posting's mark directly, or by inserting a chunk already marked."""
    import psycopg

    alice = team_store(granted, "alice")
    alice.add(NewMemory(body="alice's note", project="a"), ["alice's note"], None)
    alice.close()
    counts = "SELECT project, chunks, tokens, curated_chunks, curated_tokens FROM corpus_stats ORDER BY project"
    before = granted.execute(counts)
    memory_id = granted.execute("SELECT id FROM memories WHERE project = 'a'")[0][0]
    for sql in (
        "UPDATE corpus_stats SET curated_chunks = 1000000, curated_tokens = 1",
        "INSERT INTO corpus_stats (project, chunks, tokens, curated_chunks, curated_tokens) VALUES ('z', 1, 1, 1, 1)",
        "UPDATE chunks SET curated = false",
        "UPDATE chunk_terms SET curated = false",
        f"INSERT INTO chunks (memory_id, project, seq, text, content_hash, terms, curated)"
        f" VALUES ({memory_id}, 'a', 1, 'x', 'h', ARRAY['x'], false)",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            granted.execute(sql, role="alice")
    assert granted.execute(counts) == before
    assert granted.execute("SELECT count(*) FROM chunk_terms WHERE NOT curated") == [(0,)]


def test_a_temporary_table_does_not_run_as_the_owner_when_a_kind_changes(granted):
    """alice shadows the tables the kind-change trigger writes with temporary tables whose trigger
    grants her a project, then makes her note an observation: the owner's function must write the
    real tables, and her trigger must not run."""
    import psycopg

    with psycopg.connect(granted.dsn("alice"), autocommit=True) as conn:
        memory_id = save_note_of_her_own(conn, ["mine", "mine"])
        conn.execute(
            "CREATE FUNCTION pg_temp.take() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " INSERT INTO public.grants (role, project, curate) VALUES ('alice', 'secret', true)"
            " ON CONFLICT DO NOTHING; RETURN NULL; END $$"
        )
        for table, columns in (
            ("chunks", "id bigint, memory_id bigint, project text, terms text[], curated boolean"),
            ("chunk_terms", "chunk_id bigint, project text, curated boolean"),
            ("corpus_stats", "project text, curated_chunks bigint, curated_tokens bigint"),
        ):
            conn.execute(f"CREATE TEMP TABLE {table} ({columns})")
            conn.execute(f"INSERT INTO pg_temp.{table} (project) VALUES ('a')")
            conn.execute(f"CREATE TRIGGER take AFTER UPDATE ON pg_temp.{table} EXECUTE FUNCTION pg_temp.take()")
        conn.execute("UPDATE memories SET kind = 'observation' WHERE id = %s", (memory_id,))
    assert granted.execute("SELECT role, project FROM grants WHERE role = 'alice'") == [("alice", "a")]
    assert granted.execute("SELECT curated_chunks, curated_tokens, chunks FROM corpus_stats WHERE project = 'a'") == [
        (0, 0, 1)
    ]
    assert granted.execute("SELECT DISTINCT curated FROM chunk_terms WHERE project = 'a'") == [(False,)]


def save_note_of_her_own(conn, terms: list[str]) -> int:
    """A note in project 'a' saved as the connection's role, one chunk of ``terms``; its id."""
    memory_id = conn.execute(
        "INSERT INTO memories (kind, body, created_at, updated_at, project, content_hash)"
        " VALUES ('memory', 'mine', 0, 0, 'a', 'h') RETURNING id"
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO chunks (memory_id, project, seq, text, content_hash, terms) VALUES (%s, 'a', 0, %s, 'h', %s)",
        (memory_id, " ".join(terms), terms),
    )
    return memory_id
