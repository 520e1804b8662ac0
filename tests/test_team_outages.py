"""The team store on a bad day, with real processes and a real PostgreSQL: a member holding a lock
on the tables, a routine restart, a cold process. Each test failed before the client was fixed."""

from __future__ import annotations

import json
import threading
import time

import pytest
from embed_support import provider_env

from captain_memo.config import TeamConfig
from captain_memo.errors import StoreError
from captain_memo.memo import Memo
from captain_memo.records import NewMemory, RecallRequest


def cli(*args: str, env: dict, cwd, timeout: float = 120):
    """``captain-memo`` in a child process, in a folder outside any repository (no project)."""
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "captain_memo.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=timeout,
        cwd=cwd,
    )


def migrated(team_db) -> None:
    from captain_memo.store.postgres import TeamStore

    TeamStore(team_db.dsn()).close()


class Locker:
    """A member at a psql prompt holding ``LOCK TABLE ... IN <mode> MODE`` until released."""

    def __init__(self, team_db, role: str, tables: str, mode: str):
        import psycopg

        self.conn = psycopg.connect(team_db.dsn(role))
        self.conn.execute(f"LOCK TABLE {tables} IN {mode} MODE")

    def held(self) -> bool:
        return (
            self.conn.execute(
                "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND mode LIKE '%Exclusive%'"
            ).fetchone()[0]
            > 0
        )

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


def test_a_member_locking_the_tables_costs_a_recall_its_timeout_and_the_command_exits(team_db, embed_server, tmp_path):
    """mallory locks memories and chunks; a cold `recall` answers from the local store after the
    team's time and its process exits while the lock is still held (before: it exited only when
    the lock ended, its team threads waiting on the server)."""
    migrated(team_db)
    team_db.grant("bob", "")
    env = {
        **provider_env("openai", embed_server.url),
        "CAPTAIN_MEMO_SERVICE": "0",
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
        "CAPTAIN_MEMO_TEAM_DB": team_db.dsn("bob"),
        "CAPTAIN_MEMO_TEAM_TIMEOUT": "1",
    }
    assert cli("remember", "retries back off exponentially", env=env, cwd=tmp_path).returncode == 0
    assert cli("remember", "--team", "team retries back off exponentially", env=env, cwd=tmp_path).returncode == 0
    lock = Locker(team_db, "alice", "memories, chunks", "ACCESS EXCLUSIVE")
    try:
        done = cli("recall", "--json", "retries", env=env, cwd=tmp_path, timeout=25)
        assert lock.held()  # the command ended while the lock was still held
    finally:
        lock.release()
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [hit["title"] or hit["snippet"] for hit in answer["hits"]]
    assert "team" in answer["failures"]


def team_memo(tmp_path, dsn: str, timeout: float = 1.0) -> Memo:
    from fakes import HashEmbedder  # the tests here are about the store, not the model

    return Memo(tmp_path / "local.db", HashEmbedder(), team_config=TeamConfig(url=dsn, timeout=timeout))


def test_a_save_that_timed_out_is_never_committed_later(team_db, tmp_path, monkeypatch):
    """With memories locked against writes, `remember --team` and `publish` fail within their
    time, and nothing appears when the lock ends (before: reported failed, then committed)."""
    import captain_memo.engine.team

    monkeypatch.setattr(captain_memo.engine.team, "WRITE_TIMEOUT", 1.5)
    migrated(team_db)
    team_db.grant("bob", "")
    with team_memo(tmp_path, team_db.dsn("bob")) as memo:
        draft = memo.remember(NewMemory(body="the draft that must not leak", title="draft"))
        lock = Locker(team_db, "alice", "memories", "EXCLUSIVE")
        try:
            started = time.monotonic()
            with pytest.raises(StoreError, match="nothing was changed"):
                memo.remember_team(NewMemory(body="saved while locked", title="locked"))
            with pytest.raises(StoreError, match="nothing was changed"):
                memo.publish(draft)
            assert time.monotonic() - started < 15
        finally:
            lock.release()
        time.sleep(1.0)  # what a cancelled statement would have committed by now
        assert team_db.execute("SELECT title FROM memories") == []
        assert memo.get(draft).superseded_by_team is None  # the local copy is kept as it was
        # Once the lock is gone, the same save goes through, once.
        first = memo.remember_team(NewMemory(body="saved while locked", title="locked"))
        again = memo.remember_team(NewMemory(body="saved while locked", title="locked"))
        assert first == again
    assert team_db.execute("SELECT title FROM memories") == [("locked",)]


@pytest.fixture
def restartable():
    from team_support import RestartableServer

    server = RestartableServer()
    yield server
    server.close()


def test_a_restart_costs_no_recall_and_no_save(restartable, tmp_path):
    """After `pg_ctl restart` a running client's next recall and save work (before: two recalls
    said "terminating connection due to administrator command" and the save failed at once)."""
    team_db = restartable.pg.new_database()
    migrated(team_db)
    team_db.grant("alice", "")
    with team_memo(tmp_path, team_db.dsn("alice")) as memo:
        memo.remember_team(NewMemory(body="deploys go out on tuesdays", title="deploys"))
        assert memo.recall(RecallRequest("deploys")).stores == ("local", "team")
        restartable.restart()
        for _ in range(2):
            after = memo.recall(RecallRequest("deploys"))
            assert after.failures == {} and [h.memory.title for h in after.hits] == ["deploys"]
        restartable.restart()
        memo.remember_team(NewMemory(body="releases are cut on mondays", title="releases"))
    assert sorted(team_db.execute("SELECT title FROM memories")) == [("deploys",), ("releases",)]


def test_a_save_waits_for_a_server_coming_back(restartable, tmp_path):
    """A save asked for while the server is down for a moment is made once it is back, within the
    write's time, and made once."""
    team_db = restartable.pg.new_database()
    migrated(team_db)
    team_db.grant("alice", "")
    with team_memo(tmp_path, team_db.dsn("alice")) as memo:
        memo.remember_team(NewMemory(body="first", title="first"))
        restartable.pg_ctl("-m", "fast", "stop")
        back = threading.Timer(2.0, restartable.start)
        back.start()
        try:
            memo.remember_team(NewMemory(body="made while it restarted", title="second"))
        finally:
            back.join()
    assert sorted(team_db.execute("SELECT title FROM memories")) == [("first",), ("second",)]


def test_a_cold_process_finds_the_team_within_the_default_timeout(team_db, tmp_path):
    """A new process loads the model (the real one, seconds on a busy machine) before its first
    search; the team's second counts from when its query is sent, so the first recall has the
    team's hits (before: "no answer within 1 s" in most cold runs)."""
    migrated(team_db)
    team_db.grant("bob", "")
    env = {
        "CAPTAIN_MEMO_SERVICE": "0",
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
        "CAPTAIN_MEMO_TEAM_DB": team_db.dsn("bob"),
    }
    assert (
        cli(
            "remember", "--team", "--title", "ports", "the exporter listens on port 9200", env=env, cwd=tmp_path
        ).returncode
        == 0
    )
    for _ in range(2):
        done = cli("recall", "--json", "exporter port", env=env, cwd=tmp_path)
        answer = json.loads(done.stdout)
        assert answer["failures"] == {}, answer["failures"]
        assert [hit["id"] for hit in answer["hits"]] == ["t1"]
