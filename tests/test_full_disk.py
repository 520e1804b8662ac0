"""A full disk after a `remember` committed: the save is answered with its id and a warning, never
"nothing was saved" (the user's retry stored it twice).

The fault is faked, said here: on a real small tmpfs (8 MB, root) the commit's WAL append was
always what met the full disk first (the store file grows inside pages it already holds), so no
checkpoint failed after a commit in 36 saves shrinking the room 16 KB at a time. The checkpoint
after the commit is made to fail with SQLite's own error; the store and the warm holder are real."""

from __future__ import annotations

import sqlite3

from fakes import HashEmbedder

from captain_memo.hosting.warm_memo import WarmMemo
from captain_memo.memo import Memo
from captain_memo.requests import operations


def test_a_save_whose_checkpoint_meets_a_full_disk_is_answered_saved_with_a_warning(db_file, tmp_path, monkeypatch):
    from captain_memo.store.store import Store

    def full(self):
        raise sqlite3.OperationalError("database or disk is full")

    warm = WarmMemo(db_file, lambda path: Memo.open(path, HashEmbedder()))
    try:
        warm.remember(operations.RememberRequest("before: a first note", str(tmp_path)))
        monkeypatch.setattr(Store, "checkpoint", full)
        answer = warm.remember(operations.RememberRequest("during: saved as the disk filled", str(tmp_path)))
        assert answer["id"] == 2
        assert answer["warning"].startswith("saved, but its write-ahead log was not written into")
        assert "disk is full" in answer["warning"] and "nothing was saved" not in answer["warning"]
    finally:
        warm.close()
    conn = sqlite3.connect(db_file)
    try:
        assert [row[0] for row in conn.execute("SELECT body FROM memories ORDER BY id")] == [
            "before: a first note",
            "during: saved as the disk filled",
        ]
    finally:
        conn.close()
