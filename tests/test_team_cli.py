"""The team store from the command line, in a real repository with an origin, as a user runs it:
CAPTAIN_MEMO_TEAM_DB names a second store (sqlite:/// here; the commands are the same for
postgresql://), the repository's decisions and skills are indexed into it, `remember --team` and
`publish` share memories, and a recall lists both stores' hits with their ids apart."""

from __future__ import annotations

import json

from recall_support import cli_error, run_cli
from sources_support import DECISION_PORTS, SKILL_ROLLBACK, commit, git, init_repo
from team_support import requires_psycopg


def _repo(tmp_path, monkeypatch):
    repo = init_repo(tmp_path / "shop")
    git(repo, "remote", "add", "origin", "git@github.com:Acme/Shop.git")
    commit(
        repo,
        "Add the ports decision",
        {"docs/decisions/0002-ports.md": DECISION_PORTS, ".captain-memo/skills/rollback.md": SKILL_ROLLBACK},
    )
    monkeypatch.chdir(repo)
    return repo


def test_shared_notes_and_memories_reach_the_team_store(cli_env, tmp_path, monkeypatch, capsys):
    repo = _repo(tmp_path, monkeypatch)
    db = ["--db", cli_env]
    # Indexed locally first, before the team store existed.
    run_cli(capsys, *db, "index", "--quiet")
    assert len(json.loads(run_cli(capsys, *db, "recall", "--json", "metrics exporter port"))["hits"]) >= 1
    monkeypatch.setenv("CAPTAIN_MEMO_TEAM_DB", f"sqlite:///{tmp_path / 'team.db'}")

    out = run_cli(capsys, *db, "index", "--quiet")
    assert "team store (the repository's notes): indexed 3" in out
    run_cli(capsys, *db, "remember", "--title", "Local only", "my scratch: the exporter port clashes with 9100")
    out = run_cli(capsys, *db, "remember", "--team", "--title", "Shared", "the exporter moved to port 9200")
    assert out.strip() == "remembered #t4"

    data = json.loads(run_cli(capsys, *db, "recall", "--json", "exporter port"))
    assert data["stores"] == ["local", "team"] and data["failures"] == {}
    by_store = {(hit["store"], hit["id"]) for hit in data["hits"]}
    assert ("team", "t4") in by_store and any(store == "local" for store, _ in by_store)
    # The local copies of the repository's notes were dropped: each note is found once, in the team store.
    titles = [hit["title"] for hit in data["hits"]]
    assert len(titles) == len(set(titles))
    assert all(hit["project"] == "github.com/Acme/Shop" for hit in data["hits"] if hit["store"] == "team")

    text = run_cli(capsys, *db, "recall", "--explain", "exporter port")
    assert "#t4 [memory] Shared" in text and "team store  vector" in text and "stores: local + team" in text

    stats = json.loads(run_cli(capsys, *db, "stats", "--json"))
    assert stats["team"] == {
        "memories": 4,
        "memory": 3,
        "skill": 1,
        "observation": 0,
        "chunks": stats["team"]["chunks"],
        "vectors": stats["team"]["chunks"],
        "pending_vectors": 0,
    }
    assert "team       4 you can read  (memory 3, skill 1, observation 0;" in run_cli(capsys, *db, "stats")

    shown = json.loads(run_cli(capsys, *db, "show", "--json", "t4"))
    assert shown["id"] == "t4" and shown["store"] == "team" and shown["project"] == "github.com/Acme/Shop"

    local_id = next(hit["id"] for hit in data["hits"] if hit["store"] == "local")
    assert run_cli(capsys, *db, "supersede", str(local_id), "t4").strip() == f"#{local_id} is superseded by #t4"
    assert json.loads(run_cli(capsys, *db, "show", "--json", str(local_id)))["superseded_by"] == "t4"
    out = run_cli(capsys, *db, "publish", str(local_id))
    assert out.strip() == f"published #{local_id} as #t5 (moved to the team store)"
    assert "no memory with id" in cli_error(capsys, *db, "show", str(local_id))
    assert "is not a memory id" in cli_error(capsys, *db, "show", "tx")
    assert "no memory with id t99" in cli_error(capsys, *db, "show", "t99")  # a team id keeps its t
    assert "a team memory can be superseded only by a team memory" in cli_error(
        capsys, *db, "supersede", "t4", str(local_id)
    )
    assert repo.exists()


@requires_psycopg
def test_a_team_store_that_is_down_leaves_the_local_answer_named(cli_env, tmp_path, monkeypatch, capsys):
    from team_client_support import closed_port

    monkeypatch.setenv("CAPTAIN_MEMO_TEAM_DB", f"postgresql://dev:pw-in-url@127.0.0.1:{closed_port()}/memo")
    # A write waits for a store that is down, retrying, up to WRITE_TIMEOUT (30 s): shorter here.
    monkeypatch.setattr("captain_memo.engine.team.WRITE_TIMEOUT", 2.0)
    # stats counts the team store retrying for up to TEAM_CHECK_S (6 s) while it is down: shorter too.
    monkeypatch.setattr("captain_memo.engine.team_fanout.TEAM_CHECK_S", 1.0)
    run_cli(capsys, "--db", cli_env, "remember", "the nightly job runs at 02:00")
    out = run_cli(capsys, "--db", cli_env, "recall", "nightly job")
    assert "#1 [memory]" in out and "team store failed:" in out and "pw-in-url" not in out
    data = json.loads(run_cli(capsys, "--db", cli_env, "recall", "--json", "nightly job"))
    assert data["stores"] == ["local"] and "team" in data["failures"] and len(data["hits"]) == 1
    stats = run_cli(capsys, "--db", cli_env, "stats")
    assert "memories   1  (memory 1" in stats and "team       not counted: team store" in stats
    assert "pw-in-url" not in stats and json.loads(run_cli(capsys, "--db", cli_env, "stats", "--json"))["team"]["error"]
    err = cli_error(capsys, "--db", cli_env, "remember", "--team", "the nightly job moved to 03:00")
    assert "team store" in err and "pw-in-url" not in err and "***@127.0.0.1" in err
