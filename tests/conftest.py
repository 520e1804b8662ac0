"""Shared fixtures. Every test gets its own data folder and a clean CAPTAIN_MEMO_* environment."""

from __future__ import annotations

import os

import pytest
from fakes import HashEmbedder


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("CAPTAIN_MEMO_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CAPTAIN_MEMO_HOME", str(tmp_path / "home"))
    # Commands run in the test's process (or child) unless a test starts the warm service itself.
    monkeypatch.setenv("CAPTAIN_MEMO_SERVICE", "0")
    monkeypatch.setenv("CAPTAIN_MEMO_RUNTIME_DIR", str(tmp_path / "run"))
    yield


@pytest.fixture
def db_file(tmp_path):
    return tmp_path / "memo.db"


@pytest.fixture
def hash_embedder():
    return HashEmbedder()


@pytest.fixture
def engine(db_file, hash_embedder):
    from captain_memo.engine.core import Engine
    from captain_memo.store import Store

    eng = Engine(Store(db_file), hash_embedder)
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def local_embedder():
    from captain_memo.embeddings.local import LocalEmbedder

    return LocalEmbedder()


@pytest.fixture
def local_engine(db_file, local_embedder):
    from captain_memo.engine.core import Engine
    from captain_memo.store import Store

    eng = Engine(Store(db_file), local_embedder)
    yield eng
    eng.close()


# -- fixtures of the support modules, shared here so tests need not import them ----------------


@pytest.fixture
def cli_env(tmp_path, monkeypatch, local_embedder):
    """The CLI run in an empty folder (no git repository, so no project), sharing the session's
    loaded model rather than loading it again for every command; returns a database path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("captain_memo.engine.core.make_embedder", lambda cfg, **_: local_embedder)
    return tmp_path / "memo.db"


@pytest.fixture(scope="session")
def embed_server(local_embedder):
    """The real serve-embeddings server with the real local model, shared by the session."""
    from embed_support import start_server, stop_server

    server = start_server(local_embedder)
    yield server
    stop_server(server)


@pytest.fixture
def fault_server(local_embedder):
    """A real HTTP server on 127.0.0.1 that answers with the local model or with a chosen fault."""
    from embed_support import FaultServer

    local_embedder.embed(["load the model before any timeout starts"])
    server = FaultServer(local_embedder)
    yield server
    server.stop()


@pytest.fixture
def hostile():
    """Makes real HTTP servers on 127.0.0.1 that misbehave as told (tests/hostile_support.py)."""
    from hostile_support import Hostile

    servers = []

    def make(behave):
        servers.append(Hostile(behave))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def shared_tmp():
    """A folder the unprivileged user can reach (pytest's own tmp folders are private to root)."""
    import tempfile
    from pathlib import Path

    from readonly_support import remove_shared

    folder = Path(tempfile.mkdtemp(prefix="captain-memo-ro-"))
    folder.chmod(0o711)
    yield folder
    remove_shared(folder)


@pytest.fixture
def service_env(embed_server, tmp_path):
    """Settings for child commands that use the service: a store, a runtime folder, the model over HTTP."""
    from embed_support import provider_env
    from service_support import stop_all

    run = tmp_path / "run"
    env = {
        **provider_env("openai", embed_server.url),
        "CAPTAIN_MEMO_SERVICE": "1",
        "CAPTAIN_MEMO_RUNTIME_DIR": str(run),
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
    }
    yield env
    stop_all(run)


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL with pgvector for the session (tests/team_support.py)."""
    from team_support import start_server

    return start_server()


@pytest.fixture
def team_db(pg_server):
    """A new, empty database on the session's PostgreSQL (tests/team_support.py's TeamDatabase)."""
    return pg_server.new_database()


@pytest.fixture
def gate(local_embedder):
    """The real model served over HTTP on 127.0.0.1 behind a gate (embed_support.GatedEmbedder), so a
    test can catch a process inside a request and signal it there."""
    from embed_support import GatedEmbedder, start_server, stop_server

    gated = GatedEmbedder(local_embedder)
    server = start_server(gated)
    gated.server = server
    yield gated
    gated.release()
    stop_server(server)


@pytest.fixture
def gated_service_env(gate, tmp_path):
    """Settings for child commands served by the service, with the model behind ``gate``: a store, a
    runtime folder, and every service started there stopped at the end."""
    from embed_support import MODEL, provider_env
    from service_support import stop_all

    run_folder = tmp_path / "run"
    yield {
        **provider_env("openai", f"http://127.0.0.1:{gate.server.server_address[1]}", MODEL),
        "CAPTAIN_MEMO_SERVICE": "1",
        "CAPTAIN_MEMO_RUNTIME_DIR": str(run_folder),
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
    }
    stop_all(run_folder)


@pytest.fixture
def utc(monkeypatch):
    """Days start at local midnight; a test reading them asks for UTC (pytest.mark.usefixtures("utc"))."""
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
