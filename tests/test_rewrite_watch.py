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
import threading
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


CHECKPOINTER = """
import sqlean, sys
conn = sqlean.connect(sys.argv[1], isolation_level=None)
print(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())
"""


def test_a_copy_landing_while_the_holders_write_waits_in_the_wal_is_noticed(tmp_path):
    """The window between a commit and its checkpoint: the WAL holds the holder's frames, the
    file changes, the WAL does not. Taken for another process's checkpoint, the holder's next
    checkpoint wrote the old frames over the restored content (saves undone, pages mixed)."""
    db = tmp_path / "memo.db"
    store = held_store(db)
    shutil.copyfile(db, tmp_path / "backup.db")
    with store.write() as conn:
        conn.execute("INSERT INTO notes (text) VALUES ('after the backup')")
    assert wal_look(db).st_size > 0, "the write waits in the WAL, as between a commit and its checkpoint"
    shutil.copyfile(tmp_path / "backup.db", db)
    assert store.moved(), "a copy over the store was taken for another process's checkpoint"
    store.close()
    restored = Database(db)
    assert restored.conn.execute("SELECT text FROM notes ORDER BY rowid").fetchall() == [("written by the holder",)]
    assert restored.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_another_processs_checkpoint_of_the_holders_frames_is_not_a_copy(tmp_path):
    db = tmp_path / "memo.db"
    store = held_store(db)
    with store.write() as conn:
        conn.execute("INSERT INTO notes (text) VALUES ('waiting in the WAL')")
    before = wal_look(db)
    subprocess.run([sys.executable, "-c", CHECKPOINTER, str(db)], check=True)
    assert wal_look(db).st_mtime_ns == before.st_mtime_ns, "a passive checkpoint leaves the WAL as it was"
    assert not store.moved(), "another process's checkpoint was taken for a file copied over the store"
    store.close()
    assert Database(db).conn.execute("SELECT count(*) FROM notes").fetchone() == (2,)


LOCKER = """
import fcntl, os, sys
fd = os.open(sys.argv[1] + "-shm", os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 121)  # the checkpointer's byte, as SQLite takes it
print("locked", flush=True)
sys.stdin.readline()
"""


def test_a_change_while_another_process_checkpoints_is_looked_at_again(tmp_path):
    """A checkpointer copies frames into the file before it counts them copied: while another
    process holds the checkpoint lock, the change may be its own, so the holder looks again."""
    db = tmp_path / "memo.db"
    store = held_store(db)
    shutil.copyfile(db, tmp_path / "backup.db")
    with store.write() as conn:
        conn.execute("INSERT INTO notes (text) VALUES ('after the backup')")
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert locker.stdout.readline().strip() == "locked"
        shutil.copyfile(tmp_path / "backup.db", db)
        assert not store.moved(), "taken for a copy while a checkpoint could be running"
    finally:
        locker.communicate("\n")
    assert store.moved(), "the copy went unnoticed once no checkpoint was running"
    store.close()


def test_another_processs_checkpoint_between_a_look_and_the_wal_index_read_is_not_a_copy(tmp_path, monkeypatch):
    """The holder looks at the file, then reads SQLite's count of frames copied: a checkpoint by
    another process (an `index` writing beside the serving engine) landing between the two was in
    the count kept but not in the look, so the file's change, seen at the next look with the count
    unmoved, was taken for a copy: the engine reopened the store and a recall failed with
    'database disk image is malformed'."""
    from captain_memo.store import held_file

    db = tmp_path / "memo.db"
    store = held_store(db)
    with store.write() as conn:
        conn.execute("INSERT INTO notes (text) VALUES ('waiting in the WAL')")
    real = held_file.look

    def look_then_checkpoint(path):
        seen = real(path)
        monkeypatch.setattr(held_file, "look", real)
        subprocess.run([sys.executable, "-c", CHECKPOINTER, str(db)], check=True)
        return seen

    monkeypatch.setattr(held_file, "look", look_then_checkpoint)
    assert not store.moved()  # looked before the checkpoint
    assert not store.moved(), "another process's checkpoint was taken for a file copied over the store"
    store.close()
    assert Database(db).conn.execute("SELECT count(*) FROM notes").fetchone() == (2,)


def test_a_look_while_this_process_checkpoints_is_not_a_copy(tmp_path, monkeypatch):
    """Another thread of the holder looks while its own checkpoint copies frames: the file has
    changed, SQLite has not counted the frames copied yet (it does once they all are), and no
    other process holds the checkpoint lock (a process does not see its own). Taken for a copy,
    the serving engine reopened the store during an index beside it and dropped the WAL in use."""
    db = tmp_path / "memo.db"
    store = held_store(db)
    with store.write() as conn:
        conn.execute("INSERT INTO notes (text) VALUES ('waiting in the WAL')")
    counted = store.watch._wal_index.progress()
    seen: list[bool] = []

    class Checkpointing:
        """The holder's connection, with another thread's look taken as its checkpoint ends."""

        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, *args):
            done = self.conn.execute(sql, *args)
            if "wal_checkpoint" in sql:
                with monkeypatch.context() as stale:  # the count as it reads until the copy ends
                    stale.setattr(store.watch._wal_index, "progress", lambda: counted)
                    looker = threading.Thread(target=lambda: seen.append(store.moved()))
                    looker.start()
                    looker.join()
            return done

    real = store.conn
    store._local.conn = Checkpointing(real)
    store.checkpoint()
    store._local.conn = real
    assert seen == [False], "the holder's own checkpoint was taken for a file copied over the store"
    assert not store.moved()
    store.close()
    assert Database(db).conn.execute("SELECT count(*) FROM notes").fetchone() == (2,)


KEEPER = """
import sqlean, sys
conn = sqlean.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA wal_autocheckpoint = 0")  # its commit stays in the WAL
conn.execute("INSERT INTO notes (text) VALUES ('committed by another process')")
print("committed", flush=True)
sys.stdin.readline()
print(conn.execute("SELECT count(*) FROM notes").fetchone()[0], flush=True)
"""


def test_a_copy_seen_while_another_process_has_the_store_open_leaves_it_its_wal(tmp_path):
    """Dropping the WAL and taking the -wal and -shm away is right for a copy with no one else
    attached; with another process attached, were the copy seen wrongly, it would lose what that
    process committed there and split the store in two (each process on a WAL of its own)."""
    db = tmp_path / "memo.db"
    store = held_store(db)
    shutil.copyfile(db, tmp_path / "backup.db")
    keeper = subprocess.Popen(
        [sys.executable, "-c", KEEPER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert keeper.stdout.readline().strip() == "committed"
        assert not store.moved()  # the holder has seen the other process's commit
        wal = os.stat(f"{db}-wal")
        shutil.copyfile(tmp_path / "backup.db", db)
        assert store.moved()
        store.close()
        kept = os.stat(f"{db}-wal")
        assert (kept.st_ino, kept.st_size) == (wal.st_ino, wal.st_size), "another process's WAL was dropped"
    finally:
        out, _ = keeper.communicate("\n")
    assert out.strip() == "2"
