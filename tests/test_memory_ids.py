"""Memory ids are never reused: a stale reference (a supersede link, an editor buffer
captain-memo://memory/N, a note in a commit message) must never name another memory."""

from __future__ import annotations

import pytest
import sqlean

from captain_memo.errors import NotFoundError
from captain_memo.store import NewMemory, Store, migrations


def test_forgetting_the_newest_memory_does_not_hand_its_id_to_the_next(engine):
    first = engine.remember(NewMemory(body="ledger export runs nightly"))
    newest = engine.remember(NewMemory(body="refund batch retried after a timeout"))
    engine.forget(newest)
    again = engine.remember(NewMemory(body="a different memory saved afterwards"))
    assert again > newest > first
    with pytest.raises(NotFoundError):
        engine.store.get(newest)


def test_ids_stay_unused_across_reopening_the_store(db_file, hash_embedder):
    from captain_memo.engine.core import Engine

    engine = Engine(Store(db_file), hash_embedder)
    gone = engine.remember(NewMemory(body="soon forgotten"))
    engine.forget(gone)
    engine.close()
    engine = Engine(Store(db_file), hash_embedder)
    try:
        assert engine.remember(NewMemory(body="saved after reopening")) > gone
    finally:
        engine.close()


def old_store(path) -> None:
    """A store as the first two migrations left it (ids reusable), holding two memories, a
    supersede link, Tide state and keyword rows."""
    conn = sqlean.connect(str(path), isolation_level=None)
    conn.execute("BEGIN")
    migrations._m001_tables(conn)
    migrations._m002_vector_changes(conn)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
    conn.executemany("INSERT INTO schema_migrations VALUES (?, 0)", [(1,), (2,)])
    for mid, body, superseded_by, opened in (
        (7, "deploy runbook for the billing service", None, 1),
        (9, "billing deploy needs the feature flag first", 7, 0),
    ):
        conn.execute(
            "INSERT INTO memories (id, kind, body, created_at, updated_at, content_hash, superseded_by,"
            " stability, last_surfaced, opened_in_full) VALUES (?, 'observation', ?, 1.0e9, 1.0e9, ?, ?,"
            " 12.5, 1.5e9, ?)",
            (mid, body, f"h{mid}", superseded_by, opened),
        )
        cur = conn.execute(
            "INSERT INTO chunks (memory_id, seq, text, content_hash) VALUES (?, 0, ?, ?)", (mid, body, f"c{mid}")
        )
        conn.execute("INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", (cur.lastrowid, body))
    conn.execute("COMMIT")
    conn.close()


def test_an_existing_store_is_migrated_without_loss(db_file, hash_embedder):
    from captain_memo.engine.core import Engine

    old_store(db_file)
    engine = Engine(Store(db_file), hash_embedder)
    try:
        runbook, flag = engine.store.get(7), engine.store.get(9)
        assert (runbook.body, runbook.stability, runbook.last_surfaced, runbook.opened_in_full) == (
            "deploy runbook for the billing service",
            12.5,
            1.5e9,
            True,
        )
        assert runbook.last_opened == 1.5e9  # the best estimate of when it was opened
        assert flag.superseded_by == 7 and flag.last_opened is None
        assert [c.text for c in engine.store.chunks_of(9)] == ["billing deploy needs the feature flag first"]
        hits = engine.recall("billing deploy", legs=("keyword",), record=False).hits
        assert {h.memory.id for h in hits} == {7, 9}
        assert engine.store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        engine.forget(9)
        assert engine.remember(NewMemory(body="saved after the migration")) == 10
        # The chunks' foreign key names the rebuilt table.
        assert [row[2] for row in engine.store.conn.execute("PRAGMA foreign_key_list(chunks)")] == ["memories"]
        assert engine.store.conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        engine.close()


REFUSALS = r"""
import sys

import numpy as np

from captain_memo.errors import NotFoundError
from captain_memo.store import NewMemory, Store

store = Store(sys.argv[1])
saved = store.add(NewMemory(body="ledger export runs nightly"), ["ledger export runs nightly"], None)
calls = {
    "get": store.get,
    "delete": store.delete,
    "supersede": lambda mid: store.set_superseded(mid, saved),
    "superseded by": lambda mid: store.set_superseded(saved, mid),
}
for bad in ("1", 1.0, True, None, b"1"):
    for name, call in calls.items():
        try:
            call(bad)
        except TypeError as exc:
            print(f"refused {name} {bad!r}: {exc}")
        else:
            print(f"took {name} {bad!r}")
print("numpy", store.get(np.int64(saved)).body)
other = store.add(NewMemory(body="ledger export moved to hourly"), ["ledger export moved to hourly"], None)
store.set_superseded(np.int64(saved), np.int64(other))
print("numpy superseded by", store.get(saved).superseded_by == other)
store.delete(np.int64(other))
print("numpy deleted", [m.id for m in store.list_memories()] == [saved])
try:
    store.get(2**70)
except NotFoundError as exc:
    print("too large:", exc)
"""


def test_an_id_that_is_not_an_integer_is_refused_at_once(tmp_path):
    """``"1" in range(-2**63, 2**63)`` compares "1" with each of 2**64 integers in turn, holding
    the GIL: the calls run in a child process, so a regression fails here instead of hanging."""
    import subprocess
    import sys

    db = tmp_path / "memo.db"
    done = subprocess.run([sys.executable, "-c", REFUSALS, str(db)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    refused = [line for line in lines if line.startswith("refused ")]
    assert len(refused) == 5 * 4 - 1 and "took superseded by None" in lines, lines  # None clears it
    assert "refused get '1': a memory id is an integer, not str (parse it first: Memo.ref)" in lines
    assert lines[-4:] == [
        "numpy ledger export runs nightly",
        "numpy superseded by True",
        "numpy deleted True",
        f"too large: no memory with id {2**70}",
    ]
