"""The team store on a real PostgreSQL with pgvector (tests/team_support.py starts it), seen from a
developer's client through Memo and the command line: one ranking over the local store and the
team store, publish and supersede across them, a developer's role reading only its projects, and a
server that is down or never answers costing at most the timeout."""

from __future__ import annotations

import json
import time

import pytest
from recall_support import assert_trace, run_cli
from sources_support import commit, git, init_repo
from team_client_support import SilentServer, closed_port
from team_support import requires_psycopg

from captain_memo.config import TeamConfig
from captain_memo.memo import Memo
from captain_memo.records import LOCAL, TEAM, MemoryRef, NewMemory, RecallRequest

PROJECT = "github.com/Acme/Shop"


@pytest.fixture
def shop(tmp_path):
    repo = init_repo(tmp_path / "shop")
    git(repo, "remote", "add", "origin", "https://github.com/Acme/Shop.git")
    commit(repo, "first", {"README": "shop"})
    return repo


@pytest.fixture
def granted(team_db):
    """The team database migrated by its owner, alice granted the shop project, bob nothing."""
    from captain_memo.store.postgres import TeamStore

    TeamStore(team_db.dsn()).close()
    team_db.grant("alice", PROJECT)
    return team_db


def _memo(tmp_path, name: str, dsn: str, embedder, timeout: float = 10.0) -> Memo:
    return Memo(tmp_path / f"{name}.db", embedder, team_config=TeamConfig(dsn, timeout=timeout))


def test_one_ranking_over_the_local_store_and_postgres(tmp_path, shop, granted, hash_embedder):
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as memo:
        project = str(shop.resolve())
        memo.remember(NewMemory("retry policy: back off exponentially, five tries", project=project))
        shared = memo.remember_team(NewMemory("retry policy of the payment client: three tries", project=project))
        assert shared == MemoryRef(TEAM, 1)
        result = memo.recall(RecallRequest("retry policy", project=project))
        assert result.stores == (LOCAL, TEAM) and result.failures == {}
        assert sorted(h.memory.ref for h in result.hits) == ["1", "t1"]
        assert_trace(result.hits)
        team_hit = next(h for h in result.hits if h.memory.store == TEAM)
        assert team_hit.memory.project == PROJECT and team_hit.vector is not None and team_hit.bm25 is not None


def test_publish_and_supersede_across_the_stores(tmp_path, shop, granted, hash_embedder):
    project = str(shop.resolve())
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as memo:
        old_team = memo.remember_team(NewMemory("we deploy with fabric", project=project))
        local = memo.remember(NewMemory("we deploy with the release pipeline", project=project))
        published = memo.publish(local)
        assert published == MemoryRef(TEAM, 2)
        memo.supersede(old_team, published)
        mine = memo.remember(NewMemory("deploy: fab deploy from my laptop", project=project))
        memo.supersede(mine, "t2")
        result = memo.recall(RecallRequest("deploy", project=project))
        demoted = {h.memory.ref: h.factor("superseded") for h in result.hits}
        assert demoted == {"t1": 0.5, "t2": 1.0, str(mine): 0.5}
        assert granted.execute("SELECT superseded_by FROM memories WHERE id = 1") == [(2,)]


def test_a_role_sees_only_the_projects_it_is_granted(tmp_path, shop, granted, hash_embedder):
    project = str(shop.resolve())
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as alice:
        alice.remember_team(NewMemory("the shop's payment keys rotate monthly", project=project))
    with _memo(tmp_path, "bob", granted.dsn("bob"), hash_embedder) as bob:
        bob.remember(NewMemory("payment keys: ask alice", project=project))
        result = bob.recall(RecallRequest("payment keys", project=project))
        assert result.stores == (LOCAL, TEAM) and [h.memory.ref for h in result.hits] == ["1"]


def test_the_command_line_over_postgres(cli_env, shop, granted, monkeypatch, capsys):
    monkeypatch.chdir(shop)
    monkeypatch.setenv("CAPTAIN_MEMO_TEAM_DB", granted.dsn("alice"))
    assert run_cli(capsys, "--db", cli_env, "remember", "--team", "the exporter listens on 9200").strip() == (
        "remembered #t1"
    )
    data = json.loads(run_cli(capsys, "--db", cli_env, "recall", "--json", "exporter port"))
    assert data["stores"] == ["local", "team"] and [h["id"] for h in data["hits"]] == ["t1"]
    assert json.loads(run_cli(capsys, "--db", cli_env, "show", "--json", "t1"))["project"] == PROJECT


@requires_psycopg
def test_a_postgres_server_that_is_down_is_named(tmp_path, hash_embedder):
    dsn = f"postgresql://alice:hunter2@127.0.0.1:{closed_port()}/memo"
    with _memo(tmp_path, "alice", dsn, hash_embedder, timeout=5) as memo:
        memo.remember(NewMemory("the nightly job runs at 02:00"))
        started = time.perf_counter()
        result = memo.recall(RecallRequest("nightly job"))
        assert time.perf_counter() - started < 5
        assert [h.memory.ref for h in result.hits] == ["1"] and result.stores == (LOCAL,)
        assert "Connection refused" in result.failures["team"] and "hunter2" not in result.failures["team"]


@requires_psycopg
def test_a_postgres_server_that_never_answers_costs_the_timeout(tmp_path, hash_embedder):
    server = SilentServer()
    try:
        dsn = f"postgresql://alice:hunter2@127.0.0.1:{server.port}/memo"
        with _memo(tmp_path, "alice", dsn, hash_embedder, timeout=0.5) as memo:
            memo.remember(NewMemory("the nightly job runs at 02:00"))
            started = time.perf_counter()
            result = memo.recall(RecallRequest("nightly job"))
            waited = time.perf_counter() - started
            assert [h.memory.ref for h in result.hits] == ["1"]
            assert "no answer within 0.5 s" in result.failures["team"]
            assert 0.5 <= waited < 3
    finally:
        server.close()


def test_a_client_with_another_model_keeps_the_team_stores_keywords(tmp_path, shop, granted, hash_embedder):
    """The team store's vectors are of another model: its vector leg is refused with the fix named,
    its keyword leg still answers, and the command line names the leg that failed."""
    from fakes import HashEmbedder

    project = str(shop.resolve())
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as memo:
        memo.remember_team(NewMemory("the exporter listens on 9200", project=project))
    other = HashEmbedder(model_id="test:other")
    with _memo(tmp_path, "alice2", granted.dsn("alice"), other) as memo:
        result = memo.recall(RecallRequest("exporter listens", project=project))
        assert [h.memory.ref for h in result.hits] == ["t1"] and result.stores == (LOCAL, TEAM)
        assert set(result.failures) == {"team vector"} and "test:hash" in result.failures["team vector"]
    from captain_memo.cli.commands.recall import render
    from captain_memo.presentation.views import recall_json

    text = render(recall_json(result, time.time()))
    assert "part of the search failed" in text and "team vector leg failed" in text


def test_a_team_memory_names_its_author_and_its_t_id_wherever_it_is_shown(tmp_path, shop, granted, hash_embedder):
    """The store records who wrote a team memory: the recall JSON, the command line's list and
    `show`, and the MCP server's answers name that role, and the id keeps its t."""
    from captain_memo.cli.commands.recall import render
    from captain_memo.presentation.text import compact_hit, memory_text, recall_text
    from captain_memo.presentation.views import opened_json, recall_json

    project = str(shop.resolve())
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as memo:
        memo.remember_team(NewMemory("the exporter listens on 9200", project=project))
        data = recall_json(memo.recall(RecallRequest("exporter listens", project=project)))
        shown = opened_json(memo.show("t1"))
    [hit] = data["hits"]
    assert hit["id"] == "t1" and hit["store"] == TEAM and hit["author"] == "alice"
    listed = render(data)
    assert "#t1 [memory]" in listed and "team, by alice" in listed, listed
    assert shown["author"] == "alice" and "#t1 · now · team, by alice" in memory_text(shown)
    compact = compact_hit(hit, time.time())
    assert compact["author"] == "alice" and compact["id"] == "t1"
    answer = {"query": "exporter listens", "legs": data["legs"], "failed_legs": {}, "detail": "compact"}
    assert "#t1 [memory]" in recall_text({**answer, "hits": [compact]})
    assert "team, by alice" in recall_text({**answer, "hits": [compact]})


def test_doctor_reports_the_team_store_or_what_failed(tmp_path, granted, hash_embedder, monkeypatch):
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as memo:
        memo.remember_team(NewMemory("deploys freeze on Fridays", project=PROJECT))
        checks = {item: (ok, detail) for item, ok, detail in memo.doctor()}
    ok, detail = checks["team"]
    assert ok and "reachable: 1 memory, 1 chunk" in detail and "schema" in detail, detail

    secret = "s3cret-pass"
    down = f"postgresql://alice:{secret}@127.0.0.1:{closed_port()}/team"
    # The check retries a store that is down for up to TEAM_CHECK_S (6 s): here the timeout's 2 s.
    monkeypatch.setattr("captain_memo.engine.team_fanout.TEAM_CHECK_S", 1.0)
    with _memo(tmp_path, "down", down, hash_embedder, timeout=2.0) as memo:
        checks = {item: (ok, detail) for item, ok, detail in memo.doctor()}
    ok, detail = checks["team"]
    assert not ok and "127.0.0.1" in detail and "local store meanwhile" in detail, detail
    assert secret not in detail
    assert checks["sqlite"][0] and checks["integrity"][0]  # the local checks still ran


def test_stats_counts_only_what_the_developer_may_read(tmp_path, granted, hash_embedder):
    """alice is granted the shop project and bob nothing: the same team store counts 2 memories for
    alice and none for bob, each beside their own local figures."""
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as memo:
        memo.remember_team(NewMemory("deploys freeze on Fridays", project=PROJECT))
        memo.remember_team(NewMemory("staging resets nightly", kind="skill", project=PROJECT))
        memo.remember(NewMemory("my own scratch note"))
        stats = memo.stats()
    assert stats["memories"] == 1
    assert stats["team"] == {
        "memories": 2,
        "memory": 1,
        "skill": 1,
        "observation": 0,
        "chunks": 2,
        "vectors": 2,
        "pending_vectors": 0,
    }
    with _memo(tmp_path, "bob", granted.dsn("bob"), hash_embedder) as memo:
        assert memo.stats()["team"]["memories"] == 0


def test_a_change_question_with_a_team_store_keeps_its_window(tmp_path, shop, granted, hash_embedder):
    """The team store keeps no touched paths: its observations are ranked by relevance and recency
    after the local changes touching the topic, and a window still holds only those dated inside it."""
    day = 86400.0
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as memo:
        project = str(shop.resolve())
        now = time.time()
        memo.remember(
            NewMemory("Retry the payment client three times", kind="observation", project=project, created_at=now - day)
        )
        memo.remember_team(
            NewMemory("Retry budget raised to five", kind="observation", project=project, created_at=now - 30 * day)
        )
        result = memo.recall(RecallRequest("what changed in retry last week", project=project))
        assert result.stores == (LOCAL, TEAM) and result.failures == {}
        assert [h.memory.body for h in result.hits if h.memory.kind == "observation"] == [
            "Retry the payment client three times"
        ]
        assert "last week" in result.notice
