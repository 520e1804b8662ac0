"""Telling a store copied over in place (`cp backup.db memo.db`) from another process's writes.

File times move in steps of milliseconds, so another process's commit, checkpoint and WAL
truncation inside one step leave the WAL looking untouched while the file changed: what a copy
looks like to `stat` alone. Taken for a copy, the holder would empty a WAL another process uses.
The step of the clock cannot be made to fall there on demand, so the WAL's time is set back to
what the holder last saw (os.utime): the one part of this test that is staged."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from captain_memo.store.db import Database

WRITER = """
import sqlean, sys
conn = sqlean.connect(sys.argv[1], isolation_level=None)
conn.execute("INSERT INTO notes (text) VALUES ('written by another process')")
conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
"""


def held_store(path: Path) -> Database:
    store = Database(path)
    with store.write() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS notes (text TEXT)")
        conn.execute("INSERT INTO notes (text) VALUES ('written by the holder')")
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    store.watch.noted()
    return store


def wal_look(path: Path) -> os.stat_result:
    return os.stat(f"{path}-wal")


def test_another_processs_write_within_one_tick_is_not_taken_for_a_copy(tmp_path):
    db = tmp_path / "memo.db"
    store = held_store(db)
    before = wal_look(db)
    subprocess.run([sys.executable, "-c", WRITER, str(db)], check=True)
    assert wal_look(db).st_size == 0, "the other process emptied the WAL as it finished"
    os.utime(f"{db}-wal", ns=(before.st_atime_ns, before.st_mtime_ns))  # the same step of the clock
    assert not store.moved(), "another process's commit was taken for a file copied over the store"
    store.close()
    rows = Database(db).conn.execute("SELECT text FROM notes ORDER BY rowid").fetchall()
    assert rows == [("written by the holder",), ("written by another process",)]


def test_a_copy_over_the_store_is_still_noticed(tmp_path):
    db = tmp_path / "memo.db"
    store = held_store(db)
    shutil.copyfile(db, tmp_path / "backup.db")
    with store.write() as conn:
        conn.execute("INSERT INTO notes (text) VALUES ('after the backup')")
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    store.watch.noted()
    shutil.copyfile(tmp_path / "backup.db", db)
    assert store.moved(), "a backup copied over the store in place went unnoticed"
