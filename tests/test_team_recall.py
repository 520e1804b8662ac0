"""Recall over the local store and a team store at once, through Memo: one pool and one ranking,
each hit naming its store, ids that cannot be confused, and a team store that is down or silent
answered locally with the failure named. The team store here is a second SQLite store (a
sqlite:/// URL), which the engine treats exactly as it treats PostgreSQL."""

from __future__ import annotations

import socket
import time

import pytest
from recall_support import assert_trace
from team_client_support import SilentServer, closed_port, team_memo

from captain_memo.config import TeamConfig
from captain_memo.engine.team import TeamClient
from captain_memo.errors import InputError, NotFoundError
from captain_memo.memo import Memo
from captain_memo.records import LOCAL, TEAM, MemoryRef, NewMemory, RecallRequest


@pytest.fixture
def memo(tmp_path, hash_embedder):
    with team_memo(tmp_path, hash_embedder) as memo:
        yield memo


def test_one_ranking_over_both_stores_each_hit_naming_its_store(memo):
    local = memo.remember(NewMemory("retry policy: back off exponentially, at most five tries", title="Retries"))
    team = memo.remember_team(NewMemory("retry policy for the payment client: three tries then fail", title="Pay"))
    memo.remember(NewMemory("the office plant needs water on fridays"))
    assert local == 1 and team == MemoryRef(TEAM, 1)  # the same number in each store
    result = memo.recall(RecallRequest("retry policy"))
    assert result.stores == (LOCAL, TEAM) and result.failures == {}
    refs = [hit.memory.ref for hit in result.hits]
    assert "1" in refs and "t1" in refs and len(set(refs)) == len(refs)
    assert {hit.memory.store for hit in result.hits} == {LOCAL, TEAM}
    assert_trace(result.hits)
    # One pool: union fusion scales the keyword leg over both stores' candidates together (each
    # store's bm25 first divided by its best): the one candidate without the words is the union's 0.
    scores = [hit.score for hit in result.hits]
    assert scores == sorted(scores, reverse=True)
    assert result.pool_size == 3
    assert sorted(hit.keyword for hit in result.hits) == [0.0, 1.0, 1.0]


def test_team_hits_are_searched_under_the_portable_project(tmp_path, hash_embedder):
    """Two clones of one repository in two folders: what one publishes, the other recalls."""
    from sources_support import commit, git, init_repo

    upstream = init_repo(tmp_path / "upstream")
    commit(upstream, "first", {"a.txt": "a"})
    for name in ("one", "two"):
        git(tmp_path, "clone", "-q", str(upstream), name)
    with team_memo(tmp_path, hash_embedder) as first:
        first.remember_team(NewMemory("deploys freeze on fridays", project=str(tmp_path / "one")))
    other = tmp_path / "other-machine"
    other.mkdir()
    with team_memo(other, hash_embedder, url=f"sqlite:///{tmp_path / 'team.db'}") as second:
        found = second.recall(RecallRequest("deploys freeze", project=str(tmp_path / "two")))
        assert [h.memory.ref for h in found.hits] == ["t1"]
        assert found.hits[0].memory.project == str(upstream)
        elsewhere = second.recall(RecallRequest("deploys freeze", project=str(tmp_path / "upstream" / "..")))
        assert elsewhere.hits == ()


def test_publish_moves_a_memory_and_keep_copies_it_superseded(memo):
    first = memo.remember(NewMemory("ports: the API listens on 8080"))
    second = memo.remember(NewMemory("ports: the admin UI listens on 9090"))
    older = memo.remember(NewMemory("ports: the API listened on 80"))
    memo.supersede(older, first)
    moved = memo.publish(first)
    assert moved == MemoryRef(TEAM, 1)
    with pytest.raises(NotFoundError):
        memo.get(first)
    assert memo.show("t1").body == "ports: the API listens on 8080" and memo.show("t1").store == TEAM
    assert memo.get(older).superseded_ref == "t1"  # its link followed the memory to the team store
    copied = memo.publish(second, keep=True)
    assert copied == MemoryRef(TEAM, 2)
    assert memo.get(second).superseded_ref == "t2"
    again = memo.publish(older, keep=True)
    assert memo.publish(older, keep=True) == again  # the exact copy is not stored twice
    with pytest.raises(InputError, match="already"):
        memo.publish("t1")


def test_supersession_across_stores(memo):
    old_team = memo.remember_team(NewMemory("we deploy with fabric"))
    new_team = memo.remember_team(NewMemory("we deploy with the release pipeline"))
    local = memo.remember(NewMemory("deploy: run fab deploy from my laptop"))
    memo.supersede(old_team, new_team)
    memo.supersede(local, str(new_team))
    assert memo.get(old_team).superseded_ref == "t2"
    assert memo.get(local).superseded_ref == "t2"
    result = memo.recall(RecallRequest("deploy"))
    demoted = {hit.memory.ref: hit.factor("superseded") for hit in result.hits}
    assert demoted == {"t1": 0.5, "t2": 1.0, "1": 0.5}
    details = {hit.memory.ref: f.detail for hit in result.hits for f in hit.factors if f.name == "superseded"}
    assert details == {"t1": "by #t2", "1": "by #t2"}
    with pytest.raises(InputError, match="only by a team memory"):
        memo.supersede(new_team, local)
    with pytest.raises(NotFoundError):
        memo.supersede(local, "t99")
    assert memo.unsupersede(local) == "t2" and memo.get(local).superseded_ref is None
    assert memo.unsupersede("t1") == "t2" and memo.get("t1").superseded_ref is None
    memo.forget("t1")
    with pytest.raises(NotFoundError):
        memo.get("t1")


def test_a_memory_id_is_checked(memo):
    for bad in ("x1", "t", "t-1", "1.5", "٣"):
        with pytest.raises(InputError, match="is not a memory id"):
            memo.get(bad)


def test_without_a_team_store_team_operations_say_what_to_set(tmp_path, hash_embedder):
    from captain_memo.memo import Memo

    with Memo(tmp_path / "local.db", hash_embedder, team_config=TeamConfig()) as memo:
        memo.remember(NewMemory("alone"))
        assert memo.recall(RecallRequest("alone")).stores == (LOCAL,)
        for attempt in (lambda: memo.publish(1), lambda: memo.get("t1"), lambda: memo.remember_team(NewMemory("x"))):
            with pytest.raises(InputError, match="CAPTAIN_MEMO_TEAM_DB"):
                attempt()


# -- a team store that fails -------------------------------------------------------------------


def _connecting(port: int):
    """An opener that connects to 127.0.0.1:``port`` and waits for the server's first byte, as a
    database client does. It stands in for the PostgreSQL client: the socket and its fault are real."""

    def open_engine(url, embedder):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.recv(1)
        raise ConnectionError("the server closed the connection")

    return open_engine


def _with_team(memo, cfg: TeamConfig, opener) -> None:
    memo._team = TeamClient(cfg, lambda: memo.embedder, memo.project_id, open_engine=opener)


def test_a_team_server_that_never_answers_costs_the_timeout_once(tmp_path, hash_embedder):
    server = SilentServer()
    try:
        with team_memo(tmp_path, hash_embedder) as memo:
            memo.remember(NewMemory("cache invalidation happens on write"))
            _with_team(
                memo, TeamConfig("postgresql://alice:hunter2@127.0.0.1/memo", timeout=0.5), _connecting(server.port)
            )
            started = time.perf_counter()
            result = memo.recall(RecallRequest("cache invalidation"))
            waited = time.perf_counter() - started
            assert [h.memory.ref for h in result.hits] == ["1"] and result.degraded
            assert result.stores == (LOCAL,)
            assert "no answer within 0.5 s" in result.failures["team"]
            assert 0.5 <= waited < 5  # the timeout, not the 30 s the socket itself would wait
            # The request still hangs: the next recall does not queue behind it (the team client
            # answers it at once with this failure rather than sending it).
            again = memo.recall(RecallRequest("cache invalidation"))
            assert "still no answer" in again.failures["team"]
            assert [h.memory.ref for h in again.hits] == ["1"]
    finally:
        server.close()


def test_a_team_server_that_is_down_is_named_at_once(tmp_path, hash_embedder, caplog):
    with team_memo(tmp_path, hash_embedder) as memo:
        memo.remember(NewMemory("cache invalidation happens on write"))
        url = "postgresql://alice:hunter2@127.0.0.1/memo"
        _with_team(memo, TeamConfig(url, timeout=5), _connecting(closed_port()))
        started = time.perf_counter()
        result = memo.recall(RecallRequest("cache invalidation"))
        assert time.perf_counter() - started < 4
        assert [h.memory.ref for h in result.hits] == ["1"]
        assert "ConnectionRefusedError" in result.failures["team"]
        assert "hunter2" not in caplog.text and "team store postgresql://***@127.0.0.1/memo" in caplog.text


def test_a_misconfigured_team_store_is_named_and_its_password_never_shown(tmp_path, hash_embedder):
    with team_memo(tmp_path, hash_embedder, url="mysql://bob:s3cret@db/memo") as memo:
        memo.remember(NewMemory("local answer"))
        result = memo.recall(RecallRequest("local answer"))
        assert [h.memory.ref for h in result.hits] == ["1"]
        assert "is not a team store" in result.failures["team"] and "s3cret" not in result.failures["team"]
        assert "***@db" in result.failures["team"]


def test_a_decision_written_in_the_editor_is_indexed_into_the_team_store(tmp_path, hash_embedder):
    """The editor's re-index on write follows `index`: a repository's decision goes to the team
    store (its earlier local copy dropped), a personal note stays local."""
    from sources_support import DECISION_PORTS, git, init_repo, write

    from captain_memo.editor import EditorService

    repo = init_repo(tmp_path / "shop")
    git(repo, "remote", "add", "origin", "git@github.com:Acme/Shop.git")
    decision = write(repo, "docs/decisions/0002-ports.md", DECISION_PORTS)
    project = str(repo.resolve())
    with Memo(tmp_path / "local.db", hash_embedder, team_config=TeamConfig()) as alone:
        assert alone.index_written(str(decision), project, "main").indexed == 2  # two sections, locally
    service = EditorService(
        lambda reply: None, memo_factory=lambda settings: team_memo(tmp_path, hash_embedder), serve=False
    )
    try:
        reply = service.handle(
            {"id": 1, "op": "index", "channel": None, "settings": {}, "args": {"path": str(decision)}}
        )
        assert reply["ok"] and reply["result"]["indexed"] == 2, reply
        assert (
            service.handle(
                {"id": 2, "op": "index", "channel": None, "settings": {}, "args": {"path": str(tmp_path / "x.py")}}
            )["result"]["indexed"]
            == 0
        )
    finally:
        service.close()
    with team_memo(tmp_path, hash_embedder) as memo:
        assert memo.list_memories() == []  # the local copy went
        shared = memo.get("t1")
        assert shared.project == "github.com/Acme/Shop" and shared.source.path == "docs/decisions/0002-ports.md"


def test_an_agent_recalls_shows_and_supersedes_team_memories(tmp_path, hash_embedder):
    """Through the MCP server's tools: a team hit's id is "t1", and show and supersede take it."""
    from captain_memo.base.git_context import NO_REPOSITORY
    from captain_memo.mcpserver.memory_calls import MemoryService
    from captain_memo.mcpserver.tools import TOOLS, checked_arguments

    service = MemoryService(str(tmp_path / "local.db"), open_memo=lambda db: team_memo(tmp_path, hash_embedder))
    try:
        service.memo().remember_team(NewMemory("the queue is postgres with skip locked"))
        service.memo().remember_team(NewMemory("the queue is redis streams now"))
        found = service.recall(checked_arguments(TOOLS["recall"], {"query": "queue"}), NO_REPOSITORY)
        assert sorted(hit["id"] for hit in found["hits"]) == ["t1", "t2"] and found["failed_legs"] == {}
        shown = service.show(checked_arguments(TOOLS["show"], {"id": "t1"}), NO_REPOSITORY)
        assert shown["id"] == "t1" and shown["store"] == "team"
        service.supersede(checked_arguments(TOOLS["supersede"], {"old": "t1", "new": "t2"}))
        assert service.memo().get("t1").superseded_ref == "t2"
    finally:
        service.close()


def test_a_hint_counts_the_memories_of_both_stores_apart(memo):
    memo.remember(NewMemory("get_effective_price rounds late"))
    memo.remember_team(NewMemory("get_effective_price is cached per contract"))
    assert memo.naming("get_effective_price", None, None, 10) == [1, "t1"]
    assert memo.naming("rounds", None, None, 10) == [], "a plain word names nothing, whoever asks"


def test_bm25_is_put_on_one_scale_per_store_before_the_union(tmp_path, hash_embedder):
    """A small team store beside a larger local one: bm25's corpus statistics differ, so each
    store's keyword scores are divided by its best; the best keyword match of each store then
    gets the same keyword score, 1.0 (v2 scales the keyword leg by min-max over the union)."""
    with team_memo(tmp_path, hash_embedder) as memo:
        for i in range(40):
            memo.remember(NewMemory(f"note {i} about the payment queue and its retries, take {i}"))
        memo.remember(NewMemory("the pipeline decides deploys"))
        memo.remember_team(NewMemory("deploys go through the release pipeline"))
        memo.remember_team(NewMemory("the office closes at six"))
        result = memo.recall(RecallRequest("release pipeline deploys", profile="v2"))
        best = {store: max(h.keyword or 0 for h in result.hits if h.memory.store == store) for store in (LOCAL, TEAM)}
        assert best == {LOCAL: 1.0, TEAM: 1.0}
        assert result.hits[0].memory.ref == "t1"
