"""A store copied with `cp` while idle holds everything, whichever process wrote last: `import` and
`index` write in their own process beside the engine serving the store, and leave nothing in the
WAL for the file's copy to miss (the engine checkpoints only after its own writes).

Real processes: `captain-memo` commands, the service they start, the model over HTTP on 127.0.0.1,
a real git repository; the copy is read cold (the file alone, no -wal or -shm beside it)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from embed_support import cli
from service_support import status
from sources_support import make_project


def copied_count(db: Path, tmp_path: Path, table: str = "memories") -> int:
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)  # as `cp memo.db copy.db` does: the file alone
    conn = sqlite3.connect(copy)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()
        copy.unlink()


def serving(env: dict) -> None:
    done = cli("remember", "the first note, which starts the service holding the store", env=env)
    assert done.returncode == 0 and "running without" not in done.stderr, done.stderr
    assert status(env)["pid"]


def test_a_copy_of_the_store_after_an_import_holds_every_imported_memory(service_env, tmp_path):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    serving(service_env)
    lines = [
        json.dumps({"kind": "memory", "text": f"imported note {n}: the queue drains at {n} per second"})
        for n in range(21)
    ]
    (tmp_path / "notes.jsonl").write_text("\n".join(lines) + "\n")
    done = cli("import", str(tmp_path / "notes.jsonl"), env=service_env)
    assert done.returncode == 0, done.stderr
    assert "imported 21" in done.stdout
    assert copied_count(db, tmp_path) == 22


def test_a_copy_of_the_store_after_an_index_holds_every_note_and_commit(service_env, tmp_path):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    repo = tmp_path / "repo"
    make_project(repo, commits=12)
    serving(service_env)
    done = subprocess.run(  # in the repository: `index --git` reads the history of the folder it runs in
        [sys.executable, "-m", "captain_memo.cli.main", "index", "--git", "."],
        cwd=repo,
        env={**os.environ, **service_env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "git: 12 new commits" in done.stdout, done.stdout
    cold = sqlite3.connect(f"file:{db}?mode=ro", uri=True)  # through the WAL: what the store holds
    try:
        stored = cold.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        cold.close()
    assert stored > 12
    assert copied_count(db, tmp_path) == stored
