"""A healthy store this user may read but not write: recall works, writes say which permission is
missing, and nothing calls the file damaged.

The fault is real. File modes do not stop root (the tests usually run as root), so as root the CLI
child runs as the unprivileged user `nobody` (setpriv) on a store that `nobody` owns with its write
bits removed; as any other user the modes alone do it. The hash embedder stands in for the model
(reliability_support.py): this is about SQLite and permissions, not ranking.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from readonly_support import as_reader, lock, make_store, reader_home, requires_reader
from reliability_support import HERE, child_env

pytestmark = requires_reader


def run_cli(db: Path, *argv: str, home: Path) -> subprocess.CompletedProcess:
    env = child_env(HOME=str(home))
    done = subprocess.run(
        [*as_reader(), sys.executable, str(HERE / "reliability_support.py"), "cli", "--db", str(db), *argv],
        env=env,
        cwd=str(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    done.stdout = done.stdout.removeprefix("started\n")
    return done


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def read_only_store(shared_tmp):
    path = make_store(shared_tmp / "store")
    lock(path)
    return path, reader_home(shared_tmp / "home")


def damage_words(text: str) -> list[str]:
    return [w for w in ("damaged", "restore a backup", "move the file away", "Traceback") if w in text]


def test_recall_works_and_says_once_that_nothing_is_recorded(read_only_store):
    db, home = read_only_store
    before = digest(db)
    done = run_cli(db, "recall", "--json", "deploy port of service 3", home=home)
    assert done.returncode == 0, done.stderr
    assert '"title": "service 3"' in done.stdout
    notes = [line for line in done.stderr.splitlines() if line]
    assert len(notes) == 1, done.stderr
    assert "read-only" in notes[0] and "not recorded for Tide" in notes[0] and "permission denied" in notes[0]
    assert damage_words(done.stderr) == []
    assert digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["memo.db"]


def test_show_stats_and_backup_read_it(read_only_store):
    db, home = read_only_store
    copy = run_cli(db, "backup", f"{home}/backups/", home=home)
    assert copy.returncode == 0 and "integrity ok" in copy.stdout, copy.stderr
    assert len(list((home / "backups").glob("memo-*.db"))) == 1
    shown = run_cli(db, "show", "3", home=home)
    assert shown.returncode == 0 and "service 2" in shown.stdout, shown.stderr
    stats = run_cli(db, "stats", home=home)
    assert stats.returncode == 0 and "memories   20" in stats.stdout, stats.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["remember", "a new note"],
        ["forget", "3"],
        ["supersede", "3", "4"],
        ["supersede", "--undo", "3"],
        ["observe", "a passing remark"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_a_write_names_the_permission_not_damage(read_only_store, argv):
    db, home = read_only_store
    before = digest(db)
    done = run_cli(db, *argv, home=home)
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"cannot write to {db}" in lines[0]
    assert "permission denied" in lines[0] and "may not write the file)" in lines[0]
    assert lines[0].count(str(db)) == 1, "the file is named once"
    assert damage_words(done.stderr) == []
    assert digest(db) == before


def test_import_index_and_reindex_name_the_permission(read_only_store):
    db, home = read_only_store
    notes = home / "notes.jsonl"
    notes.write_text('{"text": "imported"}\n', encoding="utf-8")
    (home / "loose.md").write_text("# Loose\n\nA note.\n", encoding="utf-8")
    for argv in (["import", str(notes)], ["index", str(home / "loose.md")], ["reindex", "--missing"], ["reindex"]):
        done = run_cli(db, *argv, home=home)
        assert done.returncode == 1, (argv, done.stdout, done.stderr)
        assert "permission denied" in done.stderr and damage_words(done.stderr) == [], done.stderr


def test_a_folder_that_is_not_writable_is_enough(shared_tmp):
    """The file itself is writable, but SQLite cannot create its -wal and -shm files beside it."""
    db = make_store(shared_tmp / "store")
    lock(db, file_mode=0o600, folder_mode=0o500)
    home = reader_home(shared_tmp / "home")
    recall = run_cli(db, "recall", "service 7", home=home)
    assert recall.returncode == 0 and "service 7" in recall.stdout, recall.stderr
    assert "may not write in its folder" in recall.stderr
    save = run_cli(db, "remember", "x", home=home)
    assert save.returncode == 1 and "may not write in its folder" in save.stderr, save.stderr


def test_doctor_reports_read_only_not_damage(read_only_store):
    db, home = read_only_store
    done = run_cli(db, "doctor", home=home)
    assert "integrity   ok" in done.stdout, done.stdout
    assert "read-only" in done.stdout and "permission denied" in done.stdout
    assert damage_words(done.stdout + done.stderr) == []


def test_an_old_schema_cannot_be_upgraded_read_only(shared_tmp):
    db = make_store(shared_tmp / "store")
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM schema_migrations WHERE version = 2")
    conn.commit()
    conn.close()
    lock(db)
    home = reader_home(shared_tmp / "home")
    done = run_cli(db, "recall", "service", home=home)
    assert done.returncode == 1
    assert "must be created or upgraded" in done.stderr and damage_words(done.stderr) == [], done.stderr
