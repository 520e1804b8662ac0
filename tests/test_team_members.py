"""The team store shared by several members on a real PostgreSQL (tests/team_support.py): what one
member indexes, binds or supersedes, seen from another member's client and from her psql prompt."""

from __future__ import annotations

import pytest
from sources_support import DECISION_PORTS, commit, git, init_repo

from captain_memo.config import TeamConfig
from captain_memo.memo import Memo
from captain_memo.records import NewMemory

PROJECT = "github.com/Acme/Shop"


@pytest.fixture
def shop(tmp_path, monkeypatch):
    repo = init_repo(tmp_path / "shop")
    git(repo, "remote", "add", "origin", "https://github.com/Acme/Shop.git")
    commit(
        repo,
        "Add the ports and hosting decisions",
        {
            "docs/decisions/0002-ports.md": DECISION_PORTS,
            "docs/decisions/0001-hosting.md": "# Hosting\n\nOn hetzner.\n",
        },
    )
    monkeypatch.chdir(repo)
    return repo


@pytest.fixture
def granted(team_db):
    """The team database migrated by its owner; alice and bob both granted the shop project."""
    from captain_memo.store.postgres import TeamStore

    TeamStore(team_db.dsn()).close()
    team_db.grant("alice", PROJECT)
    team_db.grant("bob", PROJECT)
    return team_db


def _memo(tmp_path, name: str, dsn: str, embedder) -> Memo:
    return Memo(tmp_path / f"{name}.db", embedder, team_config=TeamConfig(dsn, timeout=30.0))


def test_a_member_indexes_around_the_notes_another_member_owns(tmp_path, shop, granted, hash_embedder, monkeypatch):
    """alice indexed the decisions first, so she owns their team memories; one note changes, one is
    deleted and a third appears, and bob indexes before she does: he leaves hers as they are with
    one line each, stores the new note, and still indexes his personal notes."""
    personal = tmp_path / "bob-notes"
    personal.mkdir()
    (personal / "mine.md").write_text("# Mine\n\nbob keeps his ssh config in a dotfiles repository\n")
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as alice:
        first = alice.index(show_progress=False)
    assert first.team is not None and first.team.indexed >= 1
    git(shop, "rm", "-q", "docs/decisions/0001-hosting.md")
    commit(
        shop,
        "Change the ports decision, add one on queues",
        {
            "docs/decisions/0002-ports.md": DECISION_PORTS.replace("9102", "9300"),
            "docs/decisions/0003-queues.md": "# Queues\n\nWe use one queue per tenant for the billing jobs.\n",
        },
    )
    monkeypatch.setenv("CAPTAIN_MEMO_NOTE_DIRS", str(personal))
    with _memo(tmp_path, "bob", granted.dsn("bob"), hash_embedder) as bob:
        outcome = bob.index(show_progress=False)
    assert outcome.notes.indexed == 1  # his personal note
    team = outcome.team
    assert team is not None and team.indexed == 1  # the queues decision
    skipped = dict(team.skipped_files)
    assert sorted(skipped) == ["docs/decisions/0001-hosting.md", "docs/decisions/0002-ports.md"]
    assert all("written by alice" in reason for reason in skipped.values())
    rows = granted.execute("SELECT author, source_path, body FROM memories ORDER BY id")
    assert ("bob", "docs/decisions/0003-queues.md") in [row[:2] for row in rows]
    kept = [(author, body) for author, path, body in rows if path != "docs/decisions/0003-queues.md"]
    assert {author for author, _ in kept} == {"alice"} and not any("9300" in body for _, body in kept)
    # Her next run finds her notes changed (bob recorded no state for them) and brings them up to date.
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as alice:
        again = alice.index(show_progress=False).team
    assert again is not None and again.skipped_files == () and again.removed == 1 and again.updated >= 1
    assert granted.execute("SELECT count(*) FROM memories WHERE body LIKE '%%9300%%'") == [(1,)]


@pytest.fixture
def projects(team_db):
    """A migrated store: alice may use project a, bob project b, carol nothing; the owner keeps a
    memory of a secret project."""
    from captain_memo.store.postgres import TeamStore

    owner = TeamStore(team_db.dsn())
    owner.add(NewMemory(body="the owner's secret", project="secret"), ["the owner's secret"], None)
    owner.close()
    team_db.grant("alice", "a")
    team_db.grant("bob", "b")
    return team_db


def _refusal(team_db, role: str, statements: list[str], params=()) -> Exception | None:
    """Run statements in one transaction of ``role`` at a psql prompt; the error that ended it."""
    import psycopg

    with psycopg.connect(team_db.dsn(role)) as conn:
        try:
            for sql in statements:
                conn.execute(sql, params if "%s" in sql else ())
        except psycopg.Error as exc:
            return exc
    return None


def _own_memory(team_db, role: str, project: str) -> int:
    return team_db.execute(
        "INSERT INTO memories (kind, body, created_at, updated_at, project, content_hash)"
        " VALUES ('memory', 'mine', 1, 1, %s, 'h') RETURNING id",
        (project,),
        role=role,
    )[0][0]


def test_no_member_sets_the_model_by_calling_the_binding(projects):
    """carol (no grant) and alice (granted) call the binding with a made-up model and dimension:
    before, either one turned meaning search off for the whole team."""
    import psycopg

    for role in ("carol", "alice"):
        refused = _refusal(projects, role, ["SELECT captain_memo_bind_model('local:all-MiniLM-L6-v2-int8', 3)"])
        assert isinstance(refused, psycopg.errors.InsufficientPrivilege), role
        refused = _refusal(projects, role, ["SELECT captain_memo_bind_saved_model('local:all-MiniLM-L6-v2-int8')"])
        assert isinstance(refused, psycopg.errors.InsufficientPrivilege), role
        assert "first vectors" in str(refused)
    assert projects.execute("SELECT key FROM team_meta") == []


def test_a_member_records_the_model_only_with_the_vectors_it_saves(projects):
    """alice's first vector, saved by SQL in her transaction, records the model with its own
    dimension; the column then takes that dimension only."""
    memory = _own_memory(projects, "alice", "a")
    saved = (
        "INSERT INTO chunks (memory_id, project, seq, text, content_hash, terms, embedding)"
        f" VALUES ({memory}, 'a', 0, 'mine', 'h', ARRAY['mine'], '[0.6,0.8]')"
    )
    assert _refusal(projects, "alice", [saved, "SELECT captain_memo_bind_saved_model('test:hash')"]) is None
    assert sorted(projects.execute("SELECT key, value FROM team_meta")) == [
        ("embed_dim", "2"),
        ("embed_model", "test:hash"),
    ]
    assert projects.execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
        " WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
    ) == [("vector(2)",)]


def test_a_members_client_records_the_model_with_its_first_save(projects, hash_embedder):
    """Through the client, as a command saves: the model and the dimension of the vectors stored."""
    import numpy as np

    from captain_memo.store.postgres import TeamStore

    # A stray vector carol could never bind with, and one alice saved without binding, of another size.
    stray = _own_memory(projects, "alice", "a")
    projects.execute(
        "INSERT INTO chunks (memory_id, project, seq, text, content_hash, terms, embedding)"
        f" VALUES ({stray}, 'a', 0, 'stray', 'h', ARRAY['stray'], '[1,0,0]')",
        role="alice",
    )
    bob = TeamStore(projects.dsn("bob"))
    bob.bind_model("test:unit", 2)
    assert bob.bound_model() is None  # nothing recorded until vectors are saved with it
    saved = bob.add(NewMemory(body="bob's first", project="b"), ["bob's first"], np.array([[0.6, 0.8]]))
    assert bob.bound_model() == ("test:unit", 2)
    bob.close()
    assert sorted(projects.execute("SELECT key, value FROM team_meta")) == [
        ("embed_dim", "2"),
        ("embed_model", "test:unit"),
    ]
    assert projects.execute("SELECT embedding::text FROM chunks WHERE memory_id = %s", (saved,)) == [("[0.6,0.8]",)]
    assert projects.execute("SELECT embedding FROM chunks WHERE memory_id = %s", (stray,)) == [(None,)]


def test_supersession_names_only_memories_the_member_may_read(projects):
    """alice sets superseded_by to the owner's secret memory and to an id that does not exist: both
    refused alike (before, the foreign key told them apart); a link made before is not shown."""
    import psycopg

    from captain_memo.store.postgres import TeamStore

    secret = projects.execute("SELECT id FROM memories WHERE project = 'secret'")[0][0]
    mine, other = _own_memory(projects, "alice", "a"), _own_memory(projects, "alice", "a")
    errors = [
        _refusal(projects, "alice", [f"UPDATE memories SET superseded_by = {target} WHERE id = {mine}"])
        for target in (secret, 10_000)
    ]
    assert all(isinstance(e, psycopg.errors.ForeignKeyViolation) for e in errors)
    assert [e.diag.message_primary.replace(str(t), "N") for e, t in zip(errors, (secret, 10_000))] == [
        "no memory N in the projects this role may read"
    ] * 2
    assert _refusal(projects, "alice", [f"UPDATE memories SET superseded_by = {other} WHERE id = {mine}"]) is None
    projects.execute("UPDATE memories SET superseded_by = %s WHERE id = %s", (secret, other))  # the owner may
    alice = TeamStore(projects.dsn("alice"))
    assert alice.get(other).superseded_by is None and alice.get(mine).superseded_by == other
    assert [(s.old_id, s.new_id) for s in alice.superseded()] == [(mine, other)]
    alice.close()


@pytest.mark.parametrize(
    "change",
    [
        "created_at = 'NaN'",
        "created_at = 'Infinity'",
        "updated_at = -1",
        "last_surfaced = 1e300",
        "stability = 'NaN'",
        "line_start = -5, line_end = -10",
        "line_start = 10, line_end = 5",
    ],
)
def test_values_no_client_writes_are_refused(projects, change):
    import psycopg

    mine = _own_memory(projects, "alice", "a")
    refused = _refusal(projects, "alice", [f"UPDATE memories SET {change} WHERE id = {mine}"])
    assert isinstance(refused, psycopg.errors.CheckViolation)


def test_the_migration_mends_rows_written_before_it(team_db, monkeypatch):
    """A store at version 2 with a NaN date and lines -5 to -10: the owner's next connection mends
    them and the constraints hold for every row."""
    from captain_memo.store.postgres import TeamStore, schema

    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:2])
    monkeypatch.setattr(schema, "LATEST", 2)
    TeamStore(team_db.dsn()).close()
    team_db.execute(
        "INSERT INTO memories (kind, body, created_at, updated_at, project, content_hash, line_start, line_end)"
        " VALUES ('memory', 'vandalised', 'NaN', 5, 'a', 'h', -5, -10), ('memory', 'fine', 7, 8, 'a', 'h', 3, 4)"
    )
    monkeypatch.undo()
    TeamStore(team_db.dsn()).close()
    assert team_db.execute("SELECT body, created_at, updated_at, line_start, line_end FROM memories ORDER BY id") == [
        ("vandalised", 5.0, 5.0, None, None),
        ("fine", 7.0, 8.0, 3, 4),
    ]
    assert team_db.execute(
        "SELECT count(*) FROM pg_constraint WHERE conrelid = 'memories'::regclass"
        " AND contype = 'c' AND NOT convalidated"
    ) == [(0,)]


@pytest.mark.parametrize("recent_local_change", [False, True])
def test_a_window_is_judged_over_both_stores(tmp_path, shop, granted, hash_embedder, recent_local_change):
    """The observation of last week about the deploy pipeline is in the team store only; the local
    store holds an older one (and, or not, a recent one about something else). Before, the window
    was judged on the local store alone: read against the older one's date, or "nothing touching
    deploy pipeline in it", and the older one shown."""
    import time

    from captain_memo.records import RecallRequest

    now = time.time()
    project = str(shop.resolve())
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as memo:
        memo.remember(
            NewMemory(
                "deploy pipeline: builds moved to the shared runners",
                kind="observation",
                project=project,
                created_at=now - 60 * 86_400,
            )
        )
        if recent_local_change:
            memo.remember(
                NewMemory(
                    "the login form keeps its state", kind="observation", project=project, created_at=now - 86_400
                )
            )
        memo.remember_team(
            NewMemory(
                "deploy pipeline: the canary stage now waits for the smoke tests",
                kind="observation",
                project=project,
                created_at=now - 2 * 86_400,
            )
        )
        result = memo.recall(RecallRequest("what changed in the deploy pipeline last week", project=project))
    assert result.failures == {}
    assert result.notice.startswith("observations last week (") and "nothing" not in result.notice
    bodies = [h.memory.body for h in result.hits]
    assert bodies[0] == "deploy pipeline: the canary stage now waits for the smoke tests"
    assert "deploy pipeline: builds moved to the shared runners" not in bodies  # outside the window


def test_dates_and_lines_no_file_has_are_shown_as_unknown(projects):
    """A memory holding a NaN date and lines -5 to -10 (as a store written by hand before its
    constraints held): `show` said "saved nany ago" and "x.py:-5--10"."""
    from dataclasses import replace

    from captain_memo.cli.commands.memories import created
    from captain_memo.presentation.chunks import place
    from captain_memo.presentation.views import opened_json
    from captain_memo.store.postgres import TeamStore

    owner = TeamStore(projects.dsn())
    memory = owner.get(owner.list_memories(limit=1)[0].id)
    owner.close()
    vandalised = replace(
        memory,
        created_at=float("nan"),
        source=replace(memory.source, path="x.py", line_start=-5, line_end=-10, origin="file"),
    )
    assert created(vandalised.created_at) == "saved at an unknown time"
    assert opened_json(vandalised)["age"] == "unknown"
    assert vandalised.source.describe() == "x.py"
    assert replace(vandalised.source, line_start=10, line_end=5).describe() == "x.py:10"
    where = place(vandalised, vandalised.body)
    assert (where.file_start, where.file_end) == (None, None)


def test_the_owner_repairs_a_model_a_member_recorded_by_hand(projects):
    """A granted member's hand-made first vector recorded a 3-d model; the owner's repair in
    doc/team.md lets the next client record the team's model."""
    import numpy as np

    from captain_memo.store.postgres import TeamStore

    memory = _own_memory(projects, "alice", "a")
    saved = (
        "INSERT INTO chunks (memory_id, project, seq, text, content_hash, terms, embedding)"
        f" VALUES ({memory}, 'a', 0, 'junk', 'h', ARRAY['junk'], '[1,0,0]')"
    )
    assert (
        _refusal(projects, "alice", [saved, "SELECT captain_memo_bind_saved_model('local:all-MiniLM-L6-v2-int8')"])
        is None
    )
    for repair in (
        "DROP INDEX chunks_embedding",
        "ALTER TABLE chunks ALTER COLUMN embedding TYPE vector",
        "DELETE FROM team_meta WHERE key IN ('embed_model', 'embed_dim')",
    ):
        projects.execute(repair)
    bob = TeamStore(projects.dsn("bob"))
    bob.bind_model("test:unit", 2)
    bob.add(NewMemory(body="bob's first", project="b"), ["bob's first"], np.array([[0.6, 0.8]]))
    bob.close()
    assert sorted(projects.execute("SELECT key, value FROM team_meta")) == [
        ("embed_dim", "2"),
        ("embed_model", "test:unit"),
    ]
    assert projects.execute("SELECT embedding FROM chunks WHERE memory_id = %s", (memory,)) == [(None,)]


def test_two_members_first_vectors_at_once_record_one_model(projects):
    """alice and bob save their first vectors at the same moment (both held at the binding's lock
    until both wait there): one records the model, the other's save follows it; no deadlock."""
    import threading
    import time

    import numpy as np

    from captain_memo.store.postgres import TeamStore, schema

    stores = {role: TeamStore(projects.dsn(role)) for role in ("alice", "bob")}
    saved, failed = {}, {}

    def save(role: str, project: str) -> None:
        store = stores[role]
        store.bind_model("test:unit", 2)
        try:
            saved[role] = store.add(
                NewMemory(body=f"{role}'s first", project=project), ["first"], np.array([[0.6, 0.8]])
            )
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failed[role] = exc

    import psycopg

    with psycopg.connect(projects.dsn()) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (schema.MIGRATION_LOCK,))
        threads = [threading.Thread(target=save, args=args) for args in (("alice", "a"), ("bob", "b"))]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while projects.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")[0][0] < 2:
            assert time.monotonic() < deadline, "the two saves never reached the binding's lock"
            time.sleep(0.01)
        holder.rollback()
    for thread in threads:
        thread.join(60)
    for store in stores.values():
        store.close()
    assert failed == {} and sorted(saved) == ["alice", "bob"]
    assert sorted(projects.execute("SELECT key, value FROM team_meta")) == [
        ("embed_dim", "2"),
        ("embed_model", "test:unit"),
    ]
    assert projects.execute("SELECT count(*) FROM chunks WHERE embedding IS NOT NULL") == [(2,)]
