"""A damaged database, a missing sqlite-vec and a failing embedder: clear messages, no lost answers.

Damage is real: bytes of a real store are truncated or overwritten, then the real CLI runs on it
in a child process (with the hash embedder, see reliability_support.py). A command either works or
exits 1 with one line naming the file and what to do; never a traceback, never an empty answer
that hides the damage.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest
from reliability_support import child_env, spawn

MEMORIES = 200
COMMANDS = (["recall", "deploy port"], ["remember", "a new note"], ["stats"], ["show", "3"], ["backup", "copy.db"])


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    """A store of MEMORIES notes, checkpointed into the one file."""
    from fakes import HashEmbedder

    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory, Store

    path = tmp_path_factory.mktemp("healthy") / "memo.db"
    engine = Engine(Store(path), HashEmbedder())
    engine.remember_many(
        [
            NewMemory(
                body=f"note {i}: the deploy of service {i} listens on port {8000 + i}. " * 8, title=f"service {i}"
            )
            for i in range(MEMORIES)
        ]
    )
    engine.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.close()
    return path


def damaged_copy(healthy, tmp_path, damage) -> str:
    path = tmp_path / "memo.db"
    shutil.copy(healthy, path)
    with open(path, "r+b") as handle:
        damage(handle, os.path.getsize(path))
    return str(path)


def root_page(healthy, table: str) -> int:
    import sqlean

    conn = sqlean.connect(str(healthy))
    try:
        return conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    finally:
        conn.close()


def run_cli(db: str, *argv: str, without_vec: bool = False, env: dict | None = None):
    proc = spawn(
        "cli-without-vec" if without_vec else "cli", "--db", db, *argv, cwd=os.path.dirname(db), env=env or child_env()
    )
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out.removeprefix("started\n"), err


DAMAGE = {
    "truncated to half": lambda h, size: h.truncate(size // 2),
    "truncated to one page": lambda h, size: h.truncate(4096),
    "truncated inside the header": lambda h, size: h.truncate(60),
    "overwritten with text": lambda h, size: (
        h.truncate(0),
        h.write(b"these are not the pages you are looking for\n" * 500),
    ),
    "header zeroed": lambda h, size: h.write(b"\0" * 4096),
    "schema page garbled": lambda h, size: (h.seek(0), h.write(h.read(100)), h.write(os.urandom(4096 - 100))),
}


@pytest.mark.slow
@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_every_command_on_an_unreadable_file_says_which_file_and_what_to_do(healthy, tmp_path, damage):
    db = damaged_copy(healthy, tmp_path, DAMAGE[damage])
    for command in COMMANDS:
        code, out, err = run_cli(db, *command)
        assert code == 1, (command, out, err)
        assert "Traceback" not in err, err
        assert out == "", out  # no partial or empty answer
        line = err.strip()
        assert line.count("\n") == 0 and db in line, line
        assert "captain-memo doctor" in line or "backup" in line, line


def test_a_damaged_table_fails_loudly_not_as_an_empty_answer(healthy, tmp_path):
    page = root_page(healthy, "memories")

    def garble(handle, size):
        handle.seek((page - 1) * 4096)
        handle.write(os.urandom(4096))

    db = damaged_copy(healthy, tmp_path, garble)
    for command in (["recall", "deploy of service 7"], ["stats"], ["show", "7"]):
        code, out, err = run_cli(db, *command)
        assert "Traceback" not in err, err
        assert code == 1 and out == "", (command, out, err)
        assert db in err and "captain-memo doctor" in err, err

    code, out, err = run_cli(db, "doctor")
    assert code == 1 and "Traceback" not in err, err
    integrity = next(line for line in out.splitlines() if " integrity " in line)
    assert integrity.startswith("FAIL") and "restore a backup" in integrity, out


def test_doctor_reports_an_unreadable_file_without_a_traceback(healthy, tmp_path):
    db = damaged_copy(healthy, tmp_path, DAMAGE["overwritten with text"])
    code, out, err = run_cli(db, "doctor")
    assert code == 1 and "Traceback" not in err, err
    assert any(line.startswith("FAIL database") and db in line and "doctor" in line for line in out.splitlines()), out

    code, out, err = run_cli(str(healthy), "doctor")
    assert code == 0, out + err
    assert all(line.startswith("ok") for line in out.splitlines()), out
    assert f"memories {MEMORIES}" in out and "permissions" in out


def test_backup_is_a_consistent_private_copy_taken_while_another_process_writes(healthy, tmp_path):
    from reliability_support import agreement, assert_consistent

    db = tmp_path / "memo.db"
    shutil.copy(healthy, db)
    old_umask = os.umask(0)  # the children inherit a umask that masks nothing: 0600 must not rely on it
    writer = spawn("write", str(db), "writer", "300", "1")
    backups = []
    try:
        while writer.poll() is None and len(backups) < 5:
            code, out, err = run_cli(str(db), "backup", str(tmp_path / f"copy{len(backups)}.db"))
            assert code == 0, err
            backups.append(tmp_path / f"copy{len(backups)}.db")
    finally:
        os.umask(old_umask)
        out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    assert backups, "the writer finished before a backup was taken"
    for copy in backups:
        assert oct(copy.stat().st_mode & 0o777) == oct(0o600)
        assert not copy.with_name(copy.name + "-wal").exists()  # one self-contained file
        report = agreement(copy)
        assert_consistent(report)
        assert MEMORIES <= report["memories"] <= MEMORIES + 300
        assert report["chunks"] == report["fts_rows"] == report["vectors"]

    code, _, err = run_cli(str(db), "backup", str(backups[0]))
    assert code == 1 and "--force" in err and "Traceback" not in err


def test_backup_refuses_a_damaged_database_and_leaves_no_partial_copy(healthy, tmp_path):
    page = root_page(healthy, "memories")

    def garble(handle, size):
        handle.seek((page - 1) * 4096)
        handle.write(os.urandom(4096))

    db = damaged_copy(healthy, tmp_path, garble)
    out_dir = tmp_path / "backups"
    out_dir.mkdir()
    code, out, err = run_cli(db, "backup", str(out_dir))
    assert code == 1 and "Traceback" not in err, err
    assert "integrity" in err and "doctor" in err, err
    assert list(out_dir.iterdir()) == []


def test_without_sqlite_vec_the_store_works_on_keywords_and_says_so(healthy, tmp_path):
    db = tmp_path / "memo.db"
    shutil.copy(healthy, db)

    code, out, err = run_cli(str(db), "recall", "deploy of service 7", without_vec=True)
    assert code == 0, err
    assert "#8 " in out.splitlines()[0], out  # note 7 is memory #8, found by keywords alone
    assert "warning: only the keyword leg answered" in out and "sqlite-vec" in out, out

    code, out, err = run_cli(str(db), "remember", "the cache for service 7 expires after ten minutes", without_vec=True)
    assert code == 0 and "no vector yet" in out, out + err
    code, out, err = run_cli(str(db), "doctor", without_vec=True)
    assert code == 1 and any(line.startswith("FAIL sqlite-vec") for line in out.splitlines()), out

    # With sqlite-vec back, the next save also fills in the vector of the note saved meanwhile.
    code, out, err = run_cli(str(db), "remember", "service 7 logs rotate daily")
    assert code == 0 and "no vector yet" not in out, out + err
    code, out, err = run_cli(str(db), "recall", "cache expires service 7")
    assert code == 0 and "warning" not in out, out
    from reliability_support import agreement

    report = agreement(db)
    assert report["pending"] == 0 and report["vectors"] == report["chunks"] == MEMORIES + 2


def test_in_process_without_sqlite_vec_recall_is_keyword_only_and_nothing_is_lost(healthy, tmp_path, monkeypatch):
    import sqlite_vec
    from fakes import HashEmbedder

    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory, Store

    db = tmp_path / "memo.db"
    shutil.copy(healthy, db)
    # The real loader fails: SQLite is asked to load a file that does not exist.
    monkeypatch.setattr(sqlite_vec, "loadable_path", lambda: str(tmp_path / "missing-vec0"))
    engine = Engine(Store(db), HashEmbedder())
    try:
        assert not engine.store.vec_available and "missing-vec0" in engine.store.vec_error
        new_id = engine.remember(NewMemory(body="rotate the signing key every ninety days", title="key rotation"))
        result = engine.recall("signing key rotation")
        assert result.degraded and result.legs == ("keyword",)
        assert "sqlite-vec" in result.failures["vector"]
        assert result.hits[0].memory.id == new_id
        assert engine.store.counts()["pending_vectors"] == 1
    finally:
        engine.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again on exit: connecting is refused


def test_a_failing_embedding_endpoint_degrades_to_keywords_with_a_warning(healthy, tmp_path):
    """A real failure: the configured Ollama endpoint is a loopback port nobody listens on."""
    env = child_env(
        CAPTAIN_MEMO_EMBED_PROVIDER="ollama",
        CAPTAIN_MEMO_EMBED_URL=f"http://127.0.0.1:{closed_port()}",
        CAPTAIN_MEMO_DB=str(tmp_path / "memo.db"),
        CAPTAIN_MEMO_HOME=str(tmp_path),
    )
    cli = [sys.executable, "-m", "captain_memo.cli.main"]
    saved = subprocess.run(
        [*cli, "remember", "--project", "none", "the staging database is rebuilt nightly"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert saved.returncode == 0, saved.stderr
    assert "no vector yet" in saved.stdout
    found = subprocess.run(
        [*cli, "recall", "--project", "none", "staging database rebuilt"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert found.returncode == 0, found.stderr
    assert "#1 " in found.stdout.splitlines()[0], found.stdout
    assert "warning: only the keyword leg answered" in found.stdout and "vector leg failed" in found.stdout
    assert "Traceback" not in saved.stderr + found.stderr
