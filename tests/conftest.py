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
    from captain_memo.engine import Engine
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
    from captain_memo.engine import Engine
    from captain_memo.store import Store

    eng = Engine(Store(db_file), local_embedder)
    yield eng
    eng.close()
