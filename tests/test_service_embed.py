"""`index` and `import` embed through the engine serving their store (service/embedder.py, the
`embed` request), so no second model competes with the engine's recalls for the cores.

Real processes throughout: `captain-memo` commands, the service they start, git repositories in
temp folders, the service killed with SIGKILL. One test runs the real local model in the service
end to end; the others serve the real model over HTTP on 127.0.0.1 (service_support.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
from embed_support import REPO, GatedEmbedder, cli, provider_env, start_server, stop_server
from service_support import alive, status, wait_for
from sources_support import make_project

from captain_memo.base import runtime_folder
from captain_memo.embeddings.http_server import EmbeddingServer, serve_in_thread

# `captain-memo` in a child that writes, as it exits, which files its process had mapped.
WITH_MAPS = (
    "import atexit, sys; out = sys.argv.pop(1); "
    "atexit.register(lambda: open(out, 'w').write(open('/proc/self/maps').read())); "
    "from captain_memo.cli.main import main; sys.exit(main())"
)


def index_git(repo: Path, env: dict, maps: Path | None = None, **popen) -> subprocess.Popen:
    argv = [sys.executable, "-c", WITH_MAPS, str(maps)] if maps else [sys.executable, "-m", "captain_memo.cli.main"]
    return subprocess.Popen(
        [*argv, "index", "--git", "--json"],
        cwd=repo,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def finished(child: subprocess.Popen, timeout: float = 300) -> tuple[dict, str]:
    out, err = child.communicate(timeout=timeout)
    assert child.returncode == 0, err
    return json.loads(out), err


def stored(db: Path) -> list[tuple]:
    """Every memory's kind, title and body, and each of its chunks' text and vector, sorted."""
    from captain_memo.store import Store

    store = Store(db)
    try:
        rows = store.conn.execute(
            "SELECT m.kind, m.title, m.body, c.text, v.embedding FROM memories m JOIN chunks c ON c.memory_id = m.id "
            "LEFT JOIN vec_chunks v ON v.rowid = c.id"
        ).fetchall()
    finally:
        store.close()
    return sorted(rows, key=lambda row: row[:4])


def engine_env(tmp_path: Path, name: str) -> dict:
    """The real local model in the service (no provider set): what a user runs."""
    return {
        "CAPTAIN_MEMO_SERVICE": "1",
        "CAPTAIN_MEMO_RUNTIME_DIR": str(tmp_path / "run"),
        "CAPTAIN_MEMO_DB": str(tmp_path / name),
    }


def test_index_embeds_through_the_engine_and_stores_what_a_local_index_stores(tmp_path):
    from service_support import stop_all

    repo = tmp_path / "project"
    make_project(repo, commits=20)
    served, alone = engine_env(tmp_path, "served.db"), engine_env(tmp_path, "alone.db")
    alone["CAPTAIN_MEMO_SERVICE"] = "0"
    try:
        assert cli("remember", "The ledger rounds half to even.", env=served).returncode == 0
        assert status(served)["model"] == "local:all-MiniLM-L6-v2-int8"
        maps = tmp_path / "maps"
        through, err = finished(index_git(repo, served, maps))
        assert err == ""
        own, _ = finished(index_git(repo, alone))
        embedded = status(served)["embedded"]
    finally:
        stop_all(tmp_path / "run")
    assert through == own  # the command says the same
    chunks = through["notes"]["chunks_embedded"] + through["git"]["chunks_embedded"]
    assert through["git"]["indexed"] == 20 and chunks > 20
    assert embedded["texts"] == chunks and embedded["requests"] >= 2  # the notes, then the commits
    assert "onnxruntime" not in maps.read_text()  # no second model in the command's process
    assert "numpy" in maps.read_text()  # what the command loaded is there: the maps were read whole
    mine = [row for row in stored(tmp_path / "served.db") if "half to even" not in row[2]]
    theirs = stored(tmp_path / "alone.db")
    assert [row[:4] for row in mine] == [row[:4] for row in theirs]
    assert all(row[4] is not None for row in mine)
    # The engine's batches are those the command makes itself: the same vectors, bit for bit.
    assert [row[4] for row in mine] == [row[4] for row in theirs]


def commits_stored(db: Path) -> list[str]:
    from captain_memo.store import Store

    store = Store(db)
    try:
        return [row[0] for row in store.conn.execute("SELECT source_commit FROM memories WHERE kind = 'observation'")]
    finally:
        store.close()


def test_an_engine_killed_mid_index_leaves_the_index_to_finish_it_alone(tmp_path, local_embedder):
    """The service is killed (SIGKILL) while it embeds the index's second request; the index says
    so once, embeds the rest itself, and stores every commit once, each with its vectors."""
    from captain_memo.store import Store

    gated = GatedEmbedder(local_embedder)
    server = start_server(gated)
    env = {
        **provider_env("openai", server.url),
        "CAPTAIN_MEMO_SERVICE": "1",
        "CAPTAIN_MEMO_RUNTIME_DIR": str(tmp_path / "run"),
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
    }
    repo = tmp_path / "project"
    shas = make_project(repo, commits=150)
    try:
        assert cli("remember", "The ledger rounds half to even.", env=env).returncode == 0
        pid = status(env)["pid"]
        # The first request's 64 texts reach the model in slices of 8; the second request stops
        # in the model until the service is dead.
        gated.arm(64 // 8 + 1)
        child = index_git(repo, env)
        assert gated.reached.wait(120), child.communicate()
        os.kill(pid, signal.SIGKILL)
        assert wait_for(lambda: not alive(pid))
        gated.release()
        result, err = finished(child)
    finally:
        gated.release()
        stop_server(server)
    assert err.count("embedding in this process from here") == 1, err
    assert result["git"]["indexed"] == 150
    stored_commits = commits_stored(tmp_path / "memo.db")
    assert sorted(stored_commits) == sorted(set(stored_commits)) == sorted(shas)
    store = Store(tmp_path / "memo.db")
    try:
        assert store.pending_chunks(10) == []  # every chunk has its vector
    finally:
        store.close()


def test_an_engine_of_another_model_is_not_asked(tmp_path, local_embedder, embed_server):
    """A service of another model on the command's socket (started by hand with other settings):
    the command embeds in its own process, saying nothing, and the store holds its model only."""
    other = EmbeddingServer(local_embedder, "other-model", "127.0.0.1", 0, None)
    serve_in_thread(other)
    env = {
        **provider_env("openai", embed_server.url),
        "CAPTAIN_MEMO_SERVICE": "1",
        "CAPTAIN_MEMO_RUNTIME_DIR": str(tmp_path / "run"),
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
    }
    path = runtime_folder.socket_path(env["CAPTAIN_MEMO_DB"], {**os.environ, **env})
    runtime_folder.private_dir({**os.environ, **env})
    service = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "captain_memo.hosting.socket_server",
            "--socket",
            str(path),
            "--db",
            env["CAPTAIN_MEMO_DB"],
        ],
        env={**os.environ, **env, **provider_env("openai", other.url, "other-model")},
        cwd=REPO,
        stderr=subprocess.DEVNULL,
    )
    repo = tmp_path / "project"
    make_project(repo, commits=5)
    try:
        assert wait_for(lambda: status(env).get("model") == "openai:other-model", 60)
        result, err = finished(index_git(repo, env))
        answer = status(env)
    finally:
        service.terminate()
        service.wait(30)
        stop_server(other)
    assert err == "" and result["git"]["indexed"] == 5
    assert answer["embedded"] == {"requests": 0, "texts": 0}
    from captain_memo.store import Store

    store = Store(tmp_path / "memo.db")
    try:
        assert store.meta("embed_model") == "openai:all-MiniLM-L6-v2-int8"
        assert store.pending_chunks(10) == []
    finally:
        store.close()


def test_import_embeds_through_the_engine(service_env, tmp_path):
    lines = [
        json.dumps({"kind": "memory", "text": f"Decision {i}: the cache key holds the tenant id."}) for i in range(5)
    ]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    assert cli("remember", "The ledger rounds half to even.", env=service_env).returncode == 0
    done = cli("import", str(tmp_path / "in.jsonl"), env=service_env)
    assert done.returncode == 0 and done.stdout.startswith("imported 5 memories"), done.stderr
    assert done.stderr == ""
    assert status(service_env)["embedded"]["texts"] == 5
    (tmp_path / "more.jsonl").write_text(json.dumps({"kind": "memory", "text": "Retries back off."}) + "\n")
    alone = cli("--no-service", "import", str(tmp_path / "more.jsonl"), env=service_env)
    assert alone.returncode == 0 and alone.stdout.startswith("imported 1 memory"), alone.stderr
    assert status(service_env)["embedded"]["texts"] == 5  # --no-service: embedded in its own process
    found = cli("recall", "tenant id cache key", env=service_env)
    assert "legs: vector + keyword" in found.stdout


def test_vectors_of_an_engine_are_checked(tmp_path):
    """An answer that is not the vectors asked for is not stored: the command embeds itself."""
    import base64

    from captain_memo.hosting.embedder import _decoded

    good = np.eye(2, 4, dtype="<f4")
    encoded = base64.b64encode(good.tobytes()).decode()
    assert np.array_equal(_decoded({"vectors": encoded, "dim": 4, "model": "m"}, 2, "m"), good)
    for answer in (
        {"vectors": encoded, "dim": 4, "model": "m", "count": 3},  # one vector short
        {"vectors": encoded, "dim": 4, "model": "another model"},
        {"vectors": base64.b64encode((good * 3).tobytes()).decode(), "dim": 4, "model": "m"},  # not unit length
        {"vectors": base64.b64encode(np.full((2, 4), np.nan, "<f4").tobytes()).decode(), "dim": 4, "model": "m"},
        {"vectors": "not base64!", "dim": 4, "model": "m"},
        {"dim": 4, "model": "m"},
    ):
        count = answer.pop("count", 2)
        try:
            _decoded(answer, count, "m")
        except ValueError:
            continue
        raise AssertionError(f"accepted {answer}")
