"""What a member is told by the team store, on a real PostgreSQL: connection strings of both of
libpq's forms masked everywhere, a missing grant named with the owner's command, team ids as
`t8`, and who wrote a team memory. Each failed before its fix."""

from __future__ import annotations

import json
import logging

import pytest
from recall_support import cli_error, run_cli

from captain_memo.config import TeamConfig
from captain_memo.memo import Memo
from captain_memo.records import NewMemory, RecallRequest

PASSWORD = "hunter2-kv-Secret"


def migrated(team_db) -> None:
    from captain_memo.store.postgres import TeamStore

    TeamStore(team_db.dsn()).close()


def keyword_dsn(team_db, role: str, database: str | None = None) -> str:
    """libpq's key=value form, with a password (the test server trusts its socket and ignores it)."""
    return f"host={team_db.server.socket_dir} dbname={database or team_db.name} user={role} password='{PASSWORD}'"


@pytest.fixture
def team_cli(cli_env, monkeypatch):
    monkeypatch.setenv("CAPTAIN_MEMO_SERVICE", "0")
    monkeypatch.setenv("CAPTAIN_MEMO_TEAM_TIMEOUT", "5")

    def use(dsn: str) -> list[str]:
        monkeypatch.setenv("CAPTAIN_MEMO_TEAM_DB", dsn)
        return ["--db", str(cli_env)]

    return use


def test_a_key_value_connection_string_is_masked_everywhere(team_db, team_cli, capsys, caplog):
    migrated(team_db)
    team_db.grant("bob", "")
    db = team_cli(keyword_dsn(team_db, "bob"))
    caplog.set_level(logging.INFO, logger="captain_memo")
    said = [
        run_cli(capsys, *db, "remember", "--team", "the exporter listens on port 9200"),
        run_cli(capsys, *db, "recall", "--json", "exporter port"),
        run_cli(capsys, *db, "doctor"),
        run_cli(capsys, *db, "stats", "--json"),
    ]
    assert json.loads(said[1])["stores"] == ["local", "team"]
    # The same commands against a database that does not exist: every failure names the store masked.
    db = team_cli(keyword_dsn(team_db, "bob", database="no_such_database"))
    said += [
        run_cli(capsys, *db, "recall", "--json", "exporter port"),
        run_cli(capsys, *db, "doctor", code=1),
        run_cli(capsys, *db, "stats", "--json"),
        cli_error(capsys, *db, "remember", "--team", "lost"),
    ]
    assert "no_such_database" in json.loads(said[4])["failures"]["team"]
    assert "team store host=" in caplog.text and "dbname=no_such_database user=*** password=***" in caplog.text
    for text in [*said, caplog.text]:
        assert PASSWORD not in text and "user=bob" not in text


def test_a_role_without_a_grant_is_told_which_and_what_to_ask(team_db, team_cli, capsys):
    migrated(team_db)
    db = team_cli(team_db.dsn("bob"))
    refused = cli_error(capsys, *db, "remember", "--team", "the exporter listens on port 9200")
    owner_command = "INSERT INTO grants (role, project) VALUES ('bob', '')"
    assert "your role bob has no grant for project ''" in refused and owner_command in refused
    assert "row-level security" not in refused
    checks = {c["item"]: c for c in json.loads(run_cli(capsys, *db, "doctor", "--json", code=1))}
    assert not checks["team grant"]["ok"] and owner_command in checks["team grant"]["detail"]
    answer = json.loads(run_cli(capsys, *db, "recall", "--json", "exporter port"))
    assert owner_command in answer["failures"]["team grant"]  # not a silent empty answer
    # Granted, all is well: no grant failure, and the save goes through.
    team_db.grant("bob", "")
    saved = run_cli(capsys, *db, "remember", "--team", "the exporter listens on port 9200").split("#")[-1].strip()
    answer = json.loads(run_cli(capsys, *db, "recall", "--json", "exporter port"))
    assert answer["failures"] == {} and [hit["id"] for hit in answer["hits"]] == [saved]
    assert all(c["ok"] for c in json.loads(run_cli(capsys, *db, "doctor", "--json")))


def test_the_project_string_of_a_clone(tmp_path, cli_env, capsys, monkeypatch):
    from sources_support import git, init_repo

    repo = init_repo(tmp_path / "shop")
    git(repo, "remote", "add", "origin", "git@github.com:Acme/Shop.git")
    monkeypatch.chdir(repo)
    assert run_cli(capsys, "--db", cli_env, "project").strip() == "github.com/Acme/Shop"
    sql = run_cli(capsys, "--db", cli_env, "project", "--grant", "o'brien", "--curate").strip()
    assert sql.startswith(
        "INSERT INTO grants (role, project, curate) VALUES ('o''brien', 'github.com/Acme/Shop', true)"
    )
    monkeypatch.chdir(tmp_path)
    assert "not in a git repository" in cli_error(capsys, "--db", cli_env, "project")


def test_team_ids_keep_their_t_and_team_memories_their_author(team_db, team_cli, capsys, tmp_path):
    migrated(team_db)
    for role in ("alice", "bob"):
        team_db.grant(role, "")
    with Memo(tmp_path / "alice.db", team_config=TeamConfig(url=team_db.dsn("alice"), timeout=5)) as alice:
        from fakes import HashEmbedder

        alice._embedder = HashEmbedder()
        ref = alice.remember_team(NewMemory(body="deploys go out on tuesdays", title="deploys"))
        assert str(ref) == "t1" and alice.get("t1").author == "alice"
        hits = alice.recall(RecallRequest("deploys")).hits
        assert [(h.memory.ref, h.memory.author) for h in hits] == [("t1", "alice")]
    db = team_cli(team_db.dsn("bob"))
    assert "no memory with id t99" in cli_error(capsys, *db, "show", "t99")
    assert "memory t1 in the team store was written by alice" in cli_error(capsys, *db, "forget", "t1")
    assert json.loads(run_cli(capsys, *db, "show", "--json", "t1"))["author"] == "alice"


TEAM_REFUSALS = """
import sys

from captain_memo.store.postgres import TeamStore

store = TeamStore(sys.argv[1])
for bad in ("1", 1.0, True, b"1"):
    for name, call in (("get", store.get), ("delete", store.delete), ("supersede", lambda mid: store.set_superseded(mid, None))):
        try:
            call(bad)
        except TypeError as exc:
            print(f"refused {name} {bad!r}: {exc}")
        else:
            print(f"took {name} {bad!r}")
store.close()
"""


def test_a_team_id_that_is_not_an_integer_is_refused_at_once(team_db):
    """As in the local store: ``"1" in range(-2**63, 2**63)`` would compare "1" with each of 2**64
    integers, holding the GIL; the calls run in a child, so a regression fails here, not hangs."""
    import subprocess
    import sys

    migrated(team_db)
    done = subprocess.run(
        [sys.executable, "-c", TEAM_REFUSALS, team_db.dsn()], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    refused = [line for line in done.stdout.splitlines() if line.startswith("refused ")]
    assert len(refused) == 4 * 3, done.stdout
    assert "refused get '1': a memory id is an integer, not str (parse it first: Memo.ref)" in refused
