"""A short run of the team store's load test (scripts/load_team.py runs 20 clients for a minute):
client processes, each its own PostgreSQL role, saving and recalling at once on a real server."""

from __future__ import annotations

import pytest

from captain_memo.bench.teamload import ClientResult, Plan, run, verify

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def loaded(pg_server, tmp_path_factory):
    database = pg_server.new_database()
    plan = Plan(clients=3, seconds=3.0, projects=4, secret_rows=30)
    report = run(plan, database.dsn(), database.dsn, tmp_path_factory.mktemp("load"))
    return database, plan, report


def test_every_acknowledged_save_is_stored_once(loaded):
    _, plan, report = loaded
    assert report.saves >= plan.clients  # every client saved at least once
    assert report.lost == []
    assert report.duplicates == []
    assert report.unacknowledged == []
    assert report.errors == []


def test_no_client_sees_a_project_it_was_not_granted(loaded):
    _, _, report = loaded
    assert report.recalls >= report.clients and report.hits_seen > 0
    assert report.leaks == 0  # through the engine's recall
    assert report.sql_leaks == 0  # through the role's own SELECT on the tables
    assert report.foreign_inserts_accepted == 0


def test_the_checks_catch_a_lost_save_and_a_duplicate(loaded):
    """The verification itself can fail: a save acknowledged but absent, and a row stored twice."""
    database, plan, _ = loaded
    stored_title, stored_id, project = database.execute(
        "SELECT title, id, project FROM memories WHERE starts_with(title, 'memo_load_') ORDER BY id LIMIT 1"
    )[0]
    database.execute(
        "INSERT INTO memories (kind, title, body, created_at, updated_at, project, content_hash)"
        " VALUES ('memory', %s, 'again', 0, 0, %s, 'x')",
        (stored_title, project),
    )
    ghost = ClientResult("memo_load_99", (project,), acks=[["memo_load_99-0", 10**9, project]])
    kept = ClientResult("memo_load_00", (project,), acks=[[stored_title, stored_id, project]])
    report = verify(database.dsn(), plan, [ghost, kept])
    assert report.lost == ["memo_load_99-0"]
    assert report.duplicates == [stored_title]
    assert not report.sound


def test_a_restart_in_the_middle_loses_and_doubles_nothing(tmp_path):
    """The server restarted (pg_ctl restart) while three clients save and recall: every client
    goes on saving without being restarted, nothing acknowledged is lost or stored twice."""
    from team_support import RestartableServer

    server = RestartableServer(members=False)
    try:
        database = server.pg.new_database()
        plan = Plan(clients=3, seconds=6.0, projects=4, secret_rows=30, restart_at=2.0)
        report = run(plan, database.dsn(), database.dsn, tmp_path / "load", server.restart)
    finally:
        server.close()
    assert report.restart["clients_saving_after"] == plan.clients
    assert report.restart["errors_after"] == 0
    assert report.lost == [] and report.duplicates == [] and report.leaks == 0
    assert report.saves > report.restart["saves_after"] > 0
