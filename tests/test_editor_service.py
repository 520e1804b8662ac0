"""The editor service behind the Neovim plugin, without Neovim: the queue, supersession, errors,
git context of the buffer's file, and each request. Real SQLite and real git repositories; the
hash embedder stands in for the model, which is not under test here."""

from __future__ import annotations

import queue
import threading

import pytest
from fakes import HashEmbedder
from nvim_support import make_repo
from sources_support import git
from team_support import requires_psycopg

from captain_memo.editor import ContextCache, EditorService, health_report
from captain_memo.engine.core import Engine
from captain_memo.memo import Memo
from captain_memo.store import NewMemory, Store


class Replies:
    """Collects what the service delivers (the remote plugin would push it to Lua)."""

    def __init__(self):
        self.items: queue.Queue = queue.Queue()

    def __call__(self, reply):
        self.items.put(reply)

    def next(self, timeout: float = 20.0) -> dict:
        while True:
            reply = self.items.get(timeout=timeout)
            if "event" not in reply:
                return reply


@pytest.fixture
def service(db_file, hash_embedder):
    replies = Replies()
    svc = EditorService(replies, memo_factory=lambda settings: Memo(settings.db, hash_embedder), serve=False)
    svc.replies = replies
    yield svc
    svc.close()


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path)


def request(db_file, op, rid=1, channel=None, **args):
    return {"id": rid, "op": op, "channel": channel, "settings": {"db": str(db_file)}, "args": args}


def ask(service, db_file, op, **args):
    reply = service.handle(request(db_file, op, **args))
    assert reply["ok"], reply
    return reply["result"]


def test_save_records_the_buffers_repository_not_the_working_folder(service, db_file, repo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the editor's folder is outside the repository
    git(repo, "checkout", "-q", "-b", "feature/x")
    path = str(repo / "src" / "billing" / "price.py")
    saved = ask(
        service,
        db_file,
        "save",
        text="price = base * (1 - discount)",
        title="Price formula",
        path=path,
        context=path,
        line_start=7,
        line_end=8,
        filetype="python",
    )
    memory = Store(db_file).get(saved["id"])
    assert memory.source.path == "src/billing/price.py" and (memory.source.line_start, memory.source.line_end) == (7, 8)
    assert memory.branch == "feature/x" and memory.project == str(repo.resolve())
    assert memory.source.commit == git(repo, "rev-parse", "HEAD") and memory.source.origin == "editor"


def test_a_file_outside_any_repository_has_no_project_or_branch(service, db_file, tmp_path):
    loose = tmp_path / "loose.txt"
    loose.write_text("x")
    saved = ask(service, db_file, "save", text="a personal note", path=str(loose), context=str(loose))
    memory = Store(db_file).get(saved["id"])
    assert (memory.project, memory.branch, memory.source.commit) == (None, None, None)
    assert memory.source.path == str(loose)


def test_recall_answers_plain_data_with_context_and_located_sources(service, db_file, repo):
    path = str(repo / "src" / "billing" / "price.py")
    ask(
        service,
        db_file,
        "save",
        text="get_effective_contract_price applies the discount",
        title="Price",
        path=path,
        context=path,
        line_start=6,
        line_end=8,
    )
    result = ask(service, db_file, "recall", query="get_effective_contract_price", context=path)
    assert result["context"]["branch"] == "main" and result["context"]["root"] == str(repo)
    [hit] = result["hits"]
    assert hit["source"]["file"] == path and "identifier" in [f["name"] for f in hit["explain"]["factors"]]
    assert result["legs"] == ["vector", "keyword"] and result["profile"] == "v3"


def test_open_returns_the_memory_in_full_and_counts_for_tide(service, db_file, repo):
    path = str(repo / "src" / "billing" / "price.py")
    saved = ask(service, db_file, "save", text="full text " * 50, title="Long", kind="observation", context=path)
    memory = ask(service, db_file, "open", id=saved["id"], context=path)
    assert memory["body"].startswith("full text") and memory["source"]["file"] is None
    assert Store(db_file).get(saved["id"]).opened_in_full


def test_hint_counts_memories_naming_the_token_exactly(service, db_file, repo):
    path = str(repo / "src" / "billing" / "price.py")
    for text in (
        "get_effective_contract_price rounds late",
        "see get_effective_contract_price()",
        "get effective contract price, in words",
        "Get_Effective_Contract_Price shouting",
    ):
        ask(service, db_file, "save", text=text, context=path)
    hint = ask(service, db_file, "hint", token="get_effective_contract_price", context=path)
    assert hint["count"] == 2
    assert ask(service, db_file, "hint", token="price", context=path)["count"] == 0, "plain words never hint"


def test_forget_and_supersede(service, db_file, repo):
    path = str(repo / "src" / "billing" / "price.py")
    old = ask(service, db_file, "save", text="prices round early", context=path)["id"]
    new = ask(service, db_file, "save", text="prices round late", context=path)["id"]
    ask(service, db_file, "supersede", old=old, new=new)
    assert Store(db_file).get(old).superseded_by == new
    ask(service, db_file, "forget", id=old)
    assert [m.id for m in Store(db_file).list_memories()] == [new]


@pytest.mark.parametrize(
    "op, args, message",
    [
        ("recall", {"query": "   "}, "the query is empty"),
        # The bounds every front end's recall meets (operations.RecallRequest): 5000 hits were taken here.
        ("recall", {"query": "x", "limit": 1001}, "recall: limit must be a whole number from 1 to 1000"),
        ("recall", {"query": "x", "how": "open"}, "recall: how must be one of search, auto"),
        ("save", {"text": ""}, "nothing to remember"),
        ("save", {"text": "x", "kind": "diary"}, "unknown kind 'diary'"),
        # Stored before, though a command's remember and an agent's refuse them:
        (
            "save",
            {"text": "x", "path": "a.py", "line_start": 5, "line_end": 2},
            "line_end (2) comes before line_start (5)",
        ),
        ("save", {"text": "x", "path": "a.py", "line_end": 2}, "save: line_end needs line_start"),
        ("save", {"text": "x", "filetype": "f" * 5000}, "save: filetype is 5,000 characters; the limit is 4,096"),
        ("open", {"id": 999}, "no memory with id 999"),
        ("forget", {"id": "seven"}, "'seven' is not a memory id"),
        ("forget", {"id": [7]}, "id must be a memory id (12, or t12 for a team memory)"),
        ("launch", {}, "unknown request 'launch'"),
    ],
)
def test_bad_requests_answer_one_readable_line(service, db_file, op, args, message):
    reply = service.handle(request(db_file, op, **args))
    assert not reply["ok"] and message in reply["error"] and "\n" not in reply["error"]
    assert "internal" not in reply


def test_an_unexpected_failure_is_marked_internal_and_logged(db_file, tmp_path):
    replies = Replies()

    def broken(settings):
        raise RuntimeError("disk on fire\nsecond line")

    svc = EditorService(replies, memo_factory=broken, serve=False)
    log_file = tmp_path / "log" / "captain-memo.log"
    reply = svc.handle(
        {"id": 3, "op": "recall", "settings": {"db": str(db_file), "log_file": str(log_file)}, "args": {"query": "x"}}
    )
    svc.close()
    import logging

    logger = logging.getLogger("captain_memo")
    for handler in list(logger.handlers):  # leave the shared logger as other tests expect it
        if getattr(handler, "baseFilename", None) == str(log_file):
            logger.removeHandler(handler)
            handler.close()
    logger.propagate = True
    assert reply == {
        "id": 3,
        "op": "recall",
        "ok": False,
        "internal": True,
        "error": "RuntimeError: disk on fire second line",
    }
    assert "Traceback" in log_file.read_text() and "disk on fire" in log_file.read_text()


def test_a_newer_request_on_a_channel_supersedes_a_queued_one(db_file, hash_embedder, repo):
    """Requests wait for a slow engine to open; of two lookups waiting, only the newer is answered."""
    gate = threading.Event()
    replies = Replies()

    def slow_engine(settings):
        gate.wait(20)
        return Memo(settings.db, hash_embedder)

    svc = EditorService(replies, memo_factory=slow_engine, serve=False)
    path = str(repo / "src" / "billing" / "price.py")
    try:
        svc.submit({**request(db_file, "save", rid=1, text="first note", context=path)})
        svc.submit(request(db_file, "recall", rid=2, channel="results", query="first", context=path))
        svc.submit(request(db_file, "recall", rid=3, channel="results", query="note", context=path))
        gate.set()
        answered = {replies.next()["id"], replies.next()["id"]}
    finally:
        svc.close()
    assert answered == {1, 3}
    assert all("event" in reply for reply in replies.items.queue), "closed: every answer is in, none for 2"


class HeldEmbedder(HashEmbedder):
    """The hash embedder, but a text containing ``HOLD`` waits for the test to let it go: a long
    save or an index-on-write still embedding (the fault the test needs, made on demand)."""

    HOLD = "slowsavemarker"

    def __init__(self):
        super().__init__()
        self.holding = threading.Event()
        self.release = threading.Event()

    def embed(self, texts):
        if any(self.HOLD in text for text in texts):
            self.holding.set()
            self.release.wait(60)
        return super().embed(texts)


def test_a_lookup_answers_while_a_save_is_still_embedding(db_file, repo):
    """Lookups run beside the writes, as the engine runs them: a recall and a hint sent after a long
    save answer before it; the writes keep their order (the save, then a forget of an older memory)."""
    embedder = HeldEmbedder()
    replies = Replies()
    svc = EditorService(replies, memo_factory=lambda settings: Memo(settings.db, embedder), serve=False)
    path = str(repo / "src" / "billing" / "price.py")
    try:
        older = svc.handle(request(db_file, "save", text="invoices use round_half_up", context=path))["result"]["id"]
        svc.submit(request(db_file, "save", rid=2, text=f"{HeldEmbedder.HOLD} retries back off", context=path))
        assert embedder.holding.wait(20), "the save never reached its embedding"
        svc.submit(request(db_file, "forget", rid=3, id=older))
        svc.submit(request(db_file, "recall", rid=4, channel="results", query="invoices round_half_up", context=path))
        svc.submit(request(db_file, "hint", rid=5, channel="hint", token="round_half_up", context=path))
        lookups = {reply["id"]: reply for reply in (replies.next(), replies.next())}
        embedder.release.set()
        writes = [replies.next(), replies.next()]
    finally:
        embedder.release.set()
        svc.close()
    assert set(lookups) == {4, 5}, "a lookup waited for the save"
    assert [hit["id"] for hit in lookups[4]["result"]["hits"]] == [older], "answered from what is stored now"
    assert lookups[5]["result"]["count"] == 1
    assert [reply["id"] for reply in writes] == [2, 3] and all(reply["ok"] for reply in writes)


def test_first_use_announces_itself(service, db_file, repo):
    service.submit(request(db_file, "recall", query="anything", context=str(repo)))
    first = service.replies.items.get(timeout=20)
    assert first["event"] == "status" and "opening the database" in first["text"]
    assert service.replies.next()["ok"]


def test_context_cache_follows_a_checkout_and_reuses_otherwise(repo):
    cache = ContextCache()
    path = str(repo / "src" / "billing" / "price.py")
    first = cache.get(path, True)
    assert cache.get(path, True) is first, "unchanged HEAD: no second git call"
    git(repo, "checkout", "-q", "-b", "other")
    assert cache.get(path, True).branch == "other"
    git(repo, "checkout", "-q", "--detach")
    assert cache.get(path, True).branch == git(repo, "rev-parse", "HEAD")[:10], "detached: the short commit"


def test_worktrees_share_a_project_unless_isolated(service, db_file, repo, tmp_path):
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(worktree))
    path = str(worktree / "src" / "billing" / "price.py")
    shared = ask(service, db_file, "recall", query="price", context=path)["context"]
    isolated = service.handle(
        {
            "id": 1,
            "op": "recall",
            "settings": {"db": str(db_file), "share_worktrees": False},
            "args": {"query": "price", "context": path},
        }
    )["result"]["context"]
    assert shared["project"] == str(repo.resolve()) and shared["branch"] == "side"
    assert isolated["project"] == str(worktree.resolve())


def test_health_report_names_each_item(db_file, repo):
    Store(db_file).close()
    items = {i["item"]: i for i in health_report({"db": str(db_file)}, str(repo))}
    assert set(items) == {"package", "sqlite", "sqlite-vec", "fts5", "database", "embedding", "repository", "watching"}
    assert items["database"]["status"] == "ok" and "writable" in items["database"]["detail"]
    assert items["watching"]["detail"].startswith("no engine serves the store yet")
    assert items["repository"]["detail"] == f"{repo.resolve()} on main"


@requires_psycopg
def test_health_report_checks_a_team_store_when_one_is_set(db_file, tmp_path, monkeypatch):
    """A shared SQLite file stands in for the team store (the same client code as PostgreSQL's); a
    closed port on 127.0.0.1 for one that is down."""
    from team_client_support import closed_port

    Store(db_file).close()
    monkeypatch.setattr("captain_memo.engine.core.make_embedder", lambda cfg, **_: HashEmbedder())
    monkeypatch.setenv("CAPTAIN_MEMO_TEAM_DB", f"sqlite:///{tmp_path / 'team.db'}")
    items = {i["item"]: i for i in health_report({"db": str(db_file)})}
    assert items["team"]["status"] == "ok" and items["team"]["detail"].startswith("reachable: 0 memories")

    monkeypatch.setenv("CAPTAIN_MEMO_TEAM_DB", f"postgresql://dev:hunter2@127.0.0.1:{closed_port()}/team")
    monkeypatch.setenv("CAPTAIN_MEMO_TEAM_TIMEOUT", "2")
    # The check retries a store that is down for up to TEAM_CHECK_S (6 s): here the team timeout's 2 s.
    monkeypatch.setattr("captain_memo.engine.team_fanout.TEAM_CHECK_S", 1.0)
    items = {i["item"]: i for i in health_report({"db": str(db_file)})}
    assert items["team"]["status"] == "warn" and "127.0.0.1" in items["team"]["detail"]
    assert "hunter2" not in items["team"]["detail"]


def test_health_report_on_a_damaged_database(tmp_path):
    bad = tmp_path / "memo.db"
    bad.write_bytes(b"\x00garbage" * 500)
    items = {i["item"]: i for i in health_report({"db": str(bad), "provider": "nonsense"})}
    assert items["database"]["status"] == "error" and "not a usable" in items["database"]["detail"]
    assert items["embedding"]["status"] == "warn" and "nonsense" in items["embedding"]["detail"]


TOKEN = "ghp_" + "a1B2c3D4e5" * 4
CONFIG = f'DATABASE = "postgres://db/shop"\nGITHUB_TOKEN = "{TOKEN}"\nTIMEOUT = 30'


def test_save_asks_before_storing_credentials_then_follows_the_choice(service, db_file, repo):
    path = str(repo / "src" / "billing" / "price.py")
    asked = ask(service, db_file, "save", text=CONFIG, title="Shop config", context=path)
    assert asked["saved"] is False and [f["text"] for f in asked["findings"]] == ["line 2: GitHub token (ghp_…)"]
    assert Store(db_file).counts()["memories"] == 0, "nothing is stored until the user chooses"

    redacted = ask(service, db_file, "save", text=CONFIG, title="Shop config", context=path, secrets="redact")
    assert redacted["saved"] and redacted["redacted"] == ["line 2: GitHub token (ghp_…)"] and redacted["kept"] == []
    body = Store(db_file).get(redacted["id"]).body
    assert TOKEN not in body and 'GITHUB_TOKEN = "[REDACTED GitHub token]"' in body and "TIMEOUT = 30" in body

    kept = ask(service, db_file, "save", text=CONFIG, title=f"token {TOKEN}", context=path, secrets="allow")
    assert kept["kept"] == ["title: GitHub token (ghp_…)", "line 2: GitHub token (ghp_…)"]
    assert TOKEN in Store(db_file).get(kept["id"]).body


def test_a_private_span_inside_a_token_does_not_keep_the_token_from_being_redacted(service, db_file, repo):
    """The editor's save path redacts as every other path does (secrets.redacted): private spans
    first, then scan and replace. The token was reported redacted and stored whole."""
    path = str(repo / "src" / "billing" / "price.py")
    text = f"{TOKEN[:10]}<private>(rotated)</private>{TOKEN[10:]} in CI"
    saved = ask(service, db_file, "save", text=text, title="CI token", context=path, secrets="redact")
    assert saved["saved"] and saved["redacted"] == ["line 1: GitHub token (ghp_…)"]
    body = Store(db_file).get(saved["id"]).body
    assert TOKEN not in body and body == "[REDACTED GitHub token] in CI"


def test_the_secrets_setting_decides_without_asking(service, db_file, repo):
    path = str(repo / "src" / "billing" / "price.py")
    saved = service.handle(
        {
            "id": 1,
            "op": "save",
            "settings": {"db": str(db_file), "secrets": "redact"},
            "args": {"text": CONFIG, "context": path},
        }
    )["result"]
    assert saved["saved"] and TOKEN not in Store(db_file).get(saved["id"]).body
    private = ask(service, db_file, "save", text=f"token <private>{TOKEN}</private> elided", context=path)
    assert private["saved"] and private["kept"] == [], "a private span is never stored, so never flagged"
    reply = service.handle(
        {
            "id": 2,
            "op": "save",
            "settings": {"db": str(db_file), "secrets": "sometimes"},
            "args": {"text": CONFIG, "context": path},
        }
    )
    assert not reply["ok"] and "secrets must be one of ask, redact, allow, not 'sometimes'" in reply["error"]


def test_index_re_reads_a_note_under_a_configured_folder_and_ignores_other_files(hash_embedder, repo, tmp_path):
    db = tmp_path / "fresh" / "memo.db"
    replies = Replies()
    svc = EditorService(replies, memo_factory=lambda settings: Memo(settings.db, hash_embedder), serve=False)
    readme = repo / "README.md"
    readme.write_text("# Shop\n\nNot a note folder.\n")
    decision = repo / "docs" / "decisions" / "0001-queue.md"
    decision.parent.mkdir(parents=True)
    decision.write_text("# Queue\n\n## Choice\n\nPostgres SKIP LOCKED is the job queue.\n")
    try:
        ignored = svc.handle(request(db, "index", path=str(readme)))["result"]
        assert ignored["files"] == 0 and not db.exists(), "a file outside the folders opens no database"
        first = svc.handle(request(db, "index", path=str(decision)))["result"]
        decision.write_text(decision.read_text() + "\n## Why not Redis\n\nOne server fewer to run.\n")
        second = svc.handle(request(db, "index", path=str(decision)))["result"]
    finally:
        svc.close()
    assert first["indexed"] == 1 and first["path"] == str(decision)
    assert (second["indexed"], second["unchanged"], second["updated"]) == (1, 1, 0)
    memories = Store(db).list_memories()
    assert {m.source.path for m in memories} == {"docs/decisions/0001-queue.md"}
    assert {m.branch for m in memories} == {"main"} and {m.project for m in memories} == {str(repo.resolve())}


def test_a_damaged_database_mid_request_is_one_line_and_the_file_is_reopened_next_time(hash_embedder, tmp_path):
    import os
    import shutil

    import sqlean

    db = tmp_path / "memo.db"
    engine = Engine(Store(db), hash_embedder)
    engine.remember_many(
        [NewMemory(body=f"service {i} listens on port {8000 + i}", title=f"service {i}") for i in range(30)]
    )
    engine.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.close()
    shutil.copy(db, tmp_path / "healthy.db")
    conn = sqlean.connect(str(db))
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memories'").fetchone()[0]
    conn.close()
    with open(db, "r+b") as handle:  # real damage: the memories table's root page overwritten
        handle.seek((page - 1) * 4096)
        handle.write(os.urandom(4096))
    svc = EditorService(Replies(), memo_factory=lambda settings: Memo(settings.db, hash_embedder), serve=False)
    try:
        for op, args in (("recall", {"query": "service 7 port"}), ("save", {"text": "new"}), ("open", {"id": 7})):
            reply = svc.handle(request(db, op, **args))
            assert not reply["ok"] and "internal" not in reply, reply
            assert reply["error"].startswith(f"{db} failed: database disk image is malformed"), reply
            assert "captain-memo doctor" in reply["error"] and "\n" not in reply["error"]
        shutil.copy(tmp_path / "healthy.db", db)  # restored from a backup while the editor runs
        assert svc.handle(request(db, "open", id=7))["result"]["title"] == "service 6"
    finally:
        svc.close()
