"""The warm service and the team store: a service answers as the person whose command started
it, so two people sharing an account (or one switching roles) must never share one. Real
service processes, a real PostgreSQL, roles chosen by libpq's PGUSER as doc/team.md allows."""

from __future__ import annotations

import json
from urllib.parse import quote

from embed_support import cli

from captain_memo.base import runtime_folder


def test_a_service_never_answers_or_writes_as_another_role(team_db, service_env, tmp_path):
    from captain_memo.store.postgres import TeamStore

    TeamStore(team_db.dsn()).close()
    url = f"postgresql:///{team_db.name}?host={quote(team_db.server.socket_dir, safe='')}"
    alice = {**service_env, "CAPTAIN_MEMO_TEAM_DB": url, "PGUSER": "alice"}
    mallory = {**alice, "PGUSER": "bob"}
    project = cli("project", env=alice).stdout.strip()
    team_db.grant("alice", project)
    saved = cli("remember", "--team", "alice's plan: rotate the signing keys on friday", env=alice)
    assert saved.returncode == 0, saved.stderr
    answer = json.loads(cli("recall", "--json", "signing keys plan", env=mallory).stdout)
    assert all(hit["store"] != "team" for hit in answer["hits"])  # bob has no grant: alice's plan stays hers
    assert "your role bob has no grant" in answer["failures"]["team grant"]
    team_db.grant("bob", project)
    assert cli("remember", "--team", "bob's note on the signing keys", env=mallory).returncode == 0
    assert sorted(team_db.execute("SELECT author::text, left(body, 5) FROM memories")) == [
        ("alice", "alice"),
        ("bob", "bob's"),
    ]
    assert runtime_folder.socket_path(service_env["CAPTAIN_MEMO_DB"], alice) != runtime_folder.socket_path(
        service_env["CAPTAIN_MEMO_DB"], mallory
    )


def test_the_team_identity_picks_the_service_and_is_never_readable_in_its_name(tmp_path):
    pgpass = tmp_path / "pgpass"
    pgpass.write_text("*:*:memo:alice:first-Secret\n")
    env = {"CAPTAIN_MEMO_TEAM_DB": "postgresql://db.example/memo", "PGPASSFILE": str(pgpass), "HOME": str(tmp_path)}
    names = {runtime_folder.service_key("memo.db", env)}
    pgpass.write_text("*:*:memo:mallory:other-Secret\n")
    names.add(runtime_folder.service_key("memo.db", env))
    names.add(runtime_folder.service_key("memo.db", {**env, "PGPASSWORD": "third-Secret"}))
    names.add(runtime_folder.service_key("memo.db", {**env, "PGSERVICE": "prod"}))
    assert len(names) == 4
    assert all("Secret" not in name and len(name) == 16 for name in names)
    # Without a team store the libpq settings do not matter (one service as before).
    assert runtime_folder.service_key("memo.db", {"PGUSER": "a"}) == runtime_folder.service_key(
        "memo.db", {"PGUSER": "b"}
    )
