"""The serving engine follows the repositories indexed into its store: commits, a checkout, a
rebase and notes changed by another program are stored without any command, a folder removed
stops being watched, and what changed while nothing watched is caught up when an engine starts.

Real processes: `captain-memo` children, the service they start, a real git repository in a tmp
folder and the local model served over HTTP (conftest's service_env). Each wait polls the store
until the change is in it, bounded (the issue's 5 s, with room for a loaded machine)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from service_support import wait_for
from sources_support import git, write

from captain_memo.editor.checkhealth import watching as watching_said

WITHIN = 15.0  # seconds: the engine stores within ~1 s of a change; a shared 2-core machine is slower


def run(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    """``captain-memo`` in a child process working in ``repo``."""
    return subprocess.run(
        [sys.executable, "-m", "captain_memo.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
        cwd=repo,
    )


def stored(env: dict, prefix: str = "commit:") -> list[str]:
    """The source keys stored under ``prefix`` (read from the live file: its WAL is read too; not
    read-only, which met "disk I/O error" while the engine truncated the WAL under it)."""
    path = Path(env["CAPTAIN_MEMO_DB"])
    if not path.exists():
        return []
    conn = sqlite3.connect(path, timeout=10)
    try:
        rows = conn.execute("SELECT source_key FROM memories WHERE source_key LIKE ?", (prefix + "%",))
        return [row[0] for row in rows]
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def note_bodies(env: dict) -> list[str]:
    path = Path(env["CAPTAIN_MEMO_DB"])
    conn = sqlite3.connect(path, timeout=10)
    try:
        return [row[0] for row in conn.execute("SELECT body FROM memories WHERE kind != 'observation'")]
    finally:
        conn.close()


def commit(repo: Path, name: str, text: str, message: str) -> str:
    write(repo, name, text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def hook(repo: Path, env: dict, event: dict) -> str:
    """What `captain-memo hook` adds to an agent's context for ``event``."""
    done = subprocess.run(
        [sys.executable, "-m", "captain_memo.cli.main", "hook"],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
        cwd=repo,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def status(repo: Path, env: dict) -> dict:
    done = run(repo, env, "service", "status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "shop"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "src/capture.py", "x = 1\n", "Add the capture module")
    write(repo, "docs/decisions/deploy.md", "# Deploy\n\nWe deploy from the main branch on Fridays.\n")
    write(repo, "AGENTS.md", "# Rules\n\nAgents run the tests first.\n")
    return repo


def test_commits_checkout_rebase_and_notes_are_followed_without_a_command(repo, service_env, monkeypatch):
    env = service_env
    assert run(repo, env, "index", "--git").returncode == 0
    assert run(repo, env, "recall", "deploy").returncode == 0  # starts the engine serving the store
    assert wait_for(lambda: status(repo, env).get("watching", {}).get("caught_up"), WITHIN)
    watching = status(repo, env)["watching"]
    assert watching["how"] == "events"
    assert [w["repository"] for w in watching["watched"]] == [str(repo.resolve())]
    assert str(repo.resolve() / "docs" / "decisions") in watching["watched"][0]["notes"]
    said = run(repo, env, "service", "status").stdout
    assert f"following 1 repository by change events:\n  {repo.resolve()}: commits, notes in" in said
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert watching_said(Path(env["CAPTAIN_MEMO_DB"])).startswith("following 1 repository by change events")

    # A commit made by another program (an agent) is stored, and a change question names it.
    sha = commit(repo, "src/capture.py", "x = 2\n", "Capture retries twice before giving up")
    assert wait_for(lambda: f"commit:{sha}" in stored(env), WITHIN)
    answer = run(repo, env, "recall", "latest change to capture.py")
    assert "Capture retries twice" in answer.stdout.split("\n\n")[0] + answer.stdout[:400]

    # A branch checked out, with a commit made on it.
    git(repo, "checkout", "-q", "-b", "feature")
    feature = commit(repo, "src/pay.py", "p = 1\n", "Pay by invoice")
    assert wait_for(lambda: f"commit:{feature}" in stored(env), WITHIN)

    # A rebase of 50 commits: one pass after it ends, every commit stored once.
    git(repo, "checkout", "-q", "main")
    for n in range(50):
        commit(repo, f"src/mod{n}.py", f"v = {n}\n", f"Module {n} added")
    passes = status(repo, env)["watching"]["passes"]
    git(repo, "checkout", "-q", "feature")
    git(repo, "rebase", "-q", "main")
    rebased = git(repo, "rev-list", "main..feature").split()
    tip = git(repo, "rev-parse", "HEAD")
    assert wait_for(lambda: f"commit:{tip}" in stored(env) and len(stored(env)) >= 53, WITHIN)
    keys = stored(env)
    assert len(keys) == len(set(keys)), "a commit stored twice"
    assert {f"commit:{c}" for c in rebased} <= set(keys)
    after = status(repo, env)["watching"]["passes"]
    assert after - passes <= 3, f"{after - passes} passes for one burst of commits and a rebase"

    # A note changed by another program is indexed again.
    write(repo, "docs/decisions/deploy.md", "# Deploy\n\nWe deploy from the release branch on Tuesdays.\n")
    assert wait_for(lambda: any("Tuesdays" in body for body in note_bodies(env)), WITHIN)

    # An agent's own file saved by a rename (as editors do), then edited again: both are followed.
    for text in ("Agents run the linter first.", "Agents run the type checker first."):
        write(repo, "AGENTS.tmp", f"# Rules\n\n{text}\n")
        os.replace(repo / "AGENTS.tmp", repo / "AGENTS.md")
        assert wait_for(lambda text=text: any(text in body for body in note_bodies(env)), WITHIN), text

    # A folder removed: its notes go, and it is no longer watched.
    import shutil

    shutil.rmtree(repo / "docs")
    assert wait_for(lambda: not any("Tuesdays" in body for body in note_bodies(env)), WITHIN)
    gone = str(repo.resolve() / "docs" / "decisions")
    assert wait_for(lambda: gone not in status(repo, env)["watching"]["watched"][0]["notes"], WITHIN)


def test_what_changed_while_nothing_watched_is_caught_up_when_an_engine_starts(repo, service_env):
    env = service_env
    assert run(repo, {**env, "CAPTAIN_MEMO_SERVICE": "0"}, "index", "--git").returncode == 0  # no engine serving
    new = [commit(repo, f"src/late{n}.py", "y = 1\n", f"Late change {n}") for n in range(3)]
    assert not {f"commit:{c}" for c in new} & set(stored(env))

    # No engine: a change question's answer says the stored history is behind; another question not.
    alone = {**env, "CAPTAIN_MEMO_SERVICE": "0"}
    notice = "3 newer commits are not indexed (run `captain-memo index --git`)"
    assert notice in run(repo, alone, "recall", "latest change to capture.py").stdout
    assert notice not in run(repo, alone, "recall", "capture module").stdout
    # An agent hears it once, at its session's start, not with every prompt.
    started = hook(repo, alone, {"hook_event_name": "SessionStart", "cwd": str(repo)})
    assert f"Captain Memo: {notice}." in started
    prompted = hook(repo, alone, {"hook_event_name": "UserPromptSubmit", "cwd": str(repo), "prompt": "latest change"})
    assert "newer commits" not in prompted

    assert run(repo, env, "recall", "late change").returncode == 0  # an engine starts serving
    assert wait_for(lambda: {f"commit:{c}" for c in new} <= set(stored(env)), WITHIN)


def test_watching_off_leaves_the_repository_alone(repo, service_env):
    env = {**service_env, "CAPTAIN_MEMO_WATCH": "0"}
    assert run(repo, env, "index", "--git").returncode == 0
    assert run(repo, env, "recall", "deploy").returncode == 0
    assert status(repo, env)["watching"] == {"how": "off", "caught_up": False, "passes": 0, "watched": []}


@pytest.mark.parametrize(
    ("raw", "mode"), [(None, "events"), ("1", "events"), ("0", "off"), ("off", "off"), ("poll", "polling")]
)
def test_the_watch_setting(raw, mode):
    from captain_memo.config import watch_mode

    assert watch_mode({} if raw is None else {"CAPTAIN_MEMO_WATCH": raw}) == mode


def test_an_agent_s_session_hears_of_newer_commits_once(repo, tmp_path, hash_embedder):
    """An MCP session that runs its calls itself (no engine, so nothing follows the repository):
    the first change question's answer says the stored history lacks the newer commits; the next
    ones do not say it again."""
    from captain_memo.engine.core import Engine
    from captain_memo.mcpserver.memory_calls import MemoryService
    from captain_memo.mcpserver.tools import TOOLS, checked_arguments
    from captain_memo.mcpserver.workspace import Workspace
    from captain_memo.memo import Memo
    from captain_memo.sources.git_history import index_history
    from captain_memo.store import Store

    db = tmp_path / "memo.db"
    engine = Engine(Store(db), hash_embedder)
    index_history(engine, repo)
    engine.close()
    for n in range(2):
        commit(repo, f"src/late{n}.py", "y = 1\n", f"Late change {n}")
    service = MemoryService(str(db), open_memo=lambda path: Memo(path, hash_embedder))
    workspace = Workspace(str(repo))
    try:
        said = []
        for query in ("capture module", "latest change to capture.py", "what changed recently in capture.py"):
            service.call("recall", checked_arguments(TOOLS["recall"], {"query": query}), workspace)
            said.append(service.take_notices())
    finally:
        service.close()
    assert said == [[], ["2 newer commits are not indexed (run `captain-memo index --git`)"], []]


def test_where_no_events_come_the_paths_are_polled(repo, tmp_path, hash_embedder):
    """CAPTAIN_MEMO_WATCH=poll (as on a network mount, which gives no events): a commit is still
    followed, and the status says how."""
    from captain_memo.engine.core import Engine
    from captain_memo.hosting.warm_memo import WarmMemo
    from captain_memo.hosting.watcher import Watcher
    from captain_memo.memo import Memo
    from captain_memo.sources.git_history import index_history
    from captain_memo.store import Store

    db = tmp_path / "memo.db"
    engine = Engine(Store(db), hash_embedder)
    index_history(engine, repo)
    engine.close()
    warm = WarmMemo(db, open_memo=lambda path: Memo(path, hash_embedder))
    watcher = Watcher(warm, "polling").start()
    try:
        assert watcher.caught_up.wait(WITHIN)
        sha = commit(repo, "src/capture.py", "x = 3\n", "Capture polls")
        assert wait_for(lambda: f"commit:{sha}" in stored({"CAPTAIN_MEMO_DB": str(db)}), WITHIN)
        assert watcher.status()["how"] == "polling"
    finally:
        watcher.stop()
        warm.close()
