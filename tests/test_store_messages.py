"""Healthy stores never hear "the file may be damaged ... move the file away".

Each case is a healthy store meeting a limit or a refusal: more candidates than sqlite-vec gives,
an embedder answering a million dimensions (a real server on 127.0.0.1), a store this process may
only read, a vector table swapped by another process. Each gets its own line; the damaged advice
is for real damage (tests/test_damaged_db.py).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess

import numpy as np
import pytest
from embed_support import cli
from hostile_support import answer

from captain_memo.store import NewMemory, Store
from captain_memo.store.db import store_error

DAMAGED = "may be damaged"


def seeded(path, body: str = "the nightly job rebuilds the search index") -> None:
    done = cli("--db", str(path), "remember", body)
    assert done.returncode == 0, done.stderr


def test_more_candidates_than_sqlite_vec_gives_still_answers_from_both_legs(tmp_path):
    db = tmp_path / "memo.db"
    seeded(db)
    done = cli("--db", str(db), "recall", "nightly search index", env={"CAPTAIN_MEMO_CANDIDATES_PER_LEG": "5000"})
    assert done.returncode == 0, done.stderr
    assert "legs: vector + keyword" in done.stdout and "nightly job" in done.stdout, done.stdout
    assert "CAPTAIN_MEMO_CANDIDATES_PER_LEG=5000" in done.stderr and "4096" in done.stderr, done.stderr
    assert DAMAGED not in done.stdout + done.stderr


def test_a_million_dimensions_are_refused_and_the_memory_is_kept_for_keyword_search(hostile, tmp_path):
    huge = base64.b64encode(np.full(1_000_000, 0.001, dtype="<f4").tobytes()).decode()

    def behave(handler):
        answer(handler, 200, json.dumps({"data": [{"index": 0, "embedding": huge}]}).encode())

    server = hostile(behave)
    db = tmp_path / "memo.db"
    env = {
        "CAPTAIN_MEMO_EMBED_PROVIDER": "openai",
        "CAPTAIN_MEMO_EMBED_URL": server.url,
        "CAPTAIN_MEMO_EMBED_MODEL": "wide",
        "CAPTAIN_MEMO_EMBED_ENCODING": "base64",
    }
    done = cli("--db", str(db), "remember", "the staging database is rebuilt nightly", env=env)
    assert done.returncode == 0, done.stderr
    assert "no vector yet" in done.stdout, done.stdout
    assert "1,000,000-dimensional" in done.stderr and "8,192" in done.stderr, done.stderr
    assert DAMAGED not in done.stdout + done.stderr
    found = cli("--db", str(db), "recall", "staging database", env=env)
    assert found.returncode == 0 and "staging database" in found.stdout, found.stdout + found.stderr
    store = Store(db)
    assert store.meta("embed_model") is None and store.counts()["pending_vectors"] == 1
    store.close()


def read_only(argv: list[str]) -> list[str]:
    """``argv`` run so that the store's file and folder cannot be written: as root, file modes do not
    bind, so the capability that overrides them is dropped (util-linux setpriv)."""
    if os.geteuid() != 0:
        return argv
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a read-only file cannot be made for this process")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner", *argv]


def test_a_read_only_store_is_called_read_only(tmp_path):
    import sys

    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "memo.db"
    seeded(db)
    store = Store(db)
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    for path in (db, folder):
        path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)
    try:
        for argv, code in ((["remember", "another note"], 1), (["recall", "nightly"], 0)):
            done = subprocess.run(
                read_only([sys.executable, "-m", "captain_memo.cli.main", "--db", str(db), *argv]),
                capture_output=True,
                text=True,
                timeout=120,
            )
            said = done.stdout + done.stderr
            assert done.returncode == code, said  # a read-only store is still read
            assert "is read-only" in said and str(db) in said and DAMAGED not in said, said
            assert "Traceback" not in said
    finally:
        folder.chmod(0o700)
        db.chmod(0o600)


def test_a_vector_table_swapped_meanwhile_asks_for_a_rerun(tmp_path, hash_embedder):
    from captain_memo.engine.core import Engine

    engine = Engine(Store(tmp_path / "memo.db"), hash_embedder)
    engine.remember(NewMemory(body="a note"))
    conn = engine.store.conn
    try:
        conn.execute("SELECT rowid FROM vec_chunks_7").fetchall()
    except Exception as exc:  # the real error of a table dropped by another process's swap
        error = store_error(exc, engine.store.path)
    engine.close()
    assert "changed while this command read it" in str(error) and DAMAGED not in str(error)
