"""`--db` on another application's SQLite file: recognised as not ours and left byte for byte as it
was (journal mode included); our own stores, older ones without the application id too, open."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from embed_support import cli

from captain_memo.errors import ForeignDatabaseError
from captain_memo.store import NewMemory, Store
from captain_memo.store.db import APPLICATION_ID


def snapshot(folder) -> dict:
    """Every file in the folder with a digest of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def foreign(path, app_id: int = 0, tables: tuple[str, ...] = ("users",)) -> None:
    conn = sqlite3.connect(path)
    for table in tables:
        conn.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute(f"INSERT INTO {table} (name) VALUES ('someone else''s row')")
    if app_id:
        conn.execute(f"PRAGMA application_id = {app_id}")
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    "app_id, tables",
    [
        (0, ("users",)),  # another application that records no id
        (0x4D504B47, ("users",)),  # one that records its own id
        (0x4D504B47, ("meta", "memories", "chunks")),  # one whose tables happen to share our names
    ],
    ids=["plain", "other-id", "same-names"],
)
def test_a_foreign_database_is_refused_before_a_byte_is_written(tmp_path, app_id, tables):
    folder = tmp_path / "other-app"
    folder.mkdir()
    path = folder / "app.sqlite"
    foreign(path, app_id, tables)
    before = snapshot(folder)
    for argv in (["remember", "a note"], ["stats"], ["recall", "note"], ["reindex"], ["doctor"]):
        done = cli("--db", str(path), *argv)
        assert done.returncode == 1, (argv, done.stdout, done.stderr)
        said = done.stderr + done.stdout
        assert "is not a Captain Memo store" in said and str(path) in said, said
        assert "damaged" not in said and "Traceback" not in said, said
    assert snapshot(folder) == before  # no -wal, no -shm, no new table, same journal mode
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()


def test_the_library_refuses_it_too(tmp_path):
    path = tmp_path / "app.sqlite"
    foreign(path)
    with pytest.raises(ForeignDatabaseError, match="it holds users"):
        Store(path)


def test_a_new_store_is_marked_as_ours(tmp_path):
    store = Store(tmp_path / "memo.db")
    assert store.conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    store.close()


def test_an_older_store_without_the_id_opens_and_is_marked(tmp_path, hash_embedder):
    from captain_memo.engine.core import Engine

    path = tmp_path / "memo.db"
    engine = Engine(Store(path), hash_embedder)
    memory_id = engine.remember(NewMemory(body="kept across the upgrade", title="old store"))
    engine.close()
    conn = sqlite3.connect(path)  # as stores were written before the application id existed
    conn.execute("PRAGMA application_id = 0")
    conn.execute("PRAGMA user_version = 0")
    conn.commit()
    conn.close()

    engine = Engine(Store(path), hash_embedder)
    assert engine.store.get(memory_id).body == "kept across the upgrade"
    assert engine.store.conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert engine.recall("upgrade").hits[0].memory.id == memory_id
    engine.close()
