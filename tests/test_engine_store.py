"""The engine over a real store: consistent rows, scope inside the search, Tide bookkeeping,
and the cut as the last stage."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import numpy as np
import pytest
import sqlean
from fakes import TableEmbedder
from recall_support import assert_trace, at_similarity, days_ago

from captain_memo.config import PROFILES
from captain_memo.engine.core import Engine
from captain_memo.ranking import lifecycle
from captain_memo.store import NewMemory, Store

LONG = "\n\n".join(
    f"Paragraph {i}: the invoice builder prices line {i} with tier tables and overrides. " * 6 for i in range(8)
)


def id_sets(store: Store) -> dict[str, set[int]]:
    conn = store.conn
    return {
        "chunks": {r[0] for r in conn.execute("SELECT id FROM chunks")},
        "fts": {r[0] for r in conn.execute("SELECT rowid FROM chunks_fts")},
        "vectors": {r[0] for r in conn.execute(f"SELECT rowid FROM {store.vec_table}")},
        "memories_with_chunks": {r[0] for r in conn.execute("SELECT DISTINCT memory_id FROM chunks")},
        "memories": {r[0] for r in conn.execute("SELECT id FROM memories")},
    }


def assert_consistent(store: Store) -> None:
    sets = id_sets(store)
    assert sets["chunks"] == sets["fts"] == sets["vectors"]
    assert sets["memories_with_chunks"] == sets["memories"]
    counts = store.counts()
    assert counts["chunks"] == counts["fts_rows"] == counts["vectors"] and counts["pending_vectors"] == 0


# -- consistency ---------------------------------------------------------------------------------


def test_add_update_delete_keep_rows_fts_and_vectors_in_step(engine):
    store = engine.store
    short = engine.remember(NewMemory(body="Tax comes from the tax service only."))
    long = engine.remember(NewMemory(body=LONG, title="Invoice builder"))
    assert len(store.chunks_of(long)) > 1
    assert_consistent(store)
    assert store.counts()["memories"] == 2

    clean, chunks = engine.prepare(NewMemory(body="Tax is computed by the tax service; drafts show no tax."))
    store.replace_body(short, clean, chunks, engine.embed(chunks))
    assert_consistent(store)
    assert "drafts" in store.get(short).body
    assert engine.recall("drafts show no tax", record=False).hits[0].memory.id == short

    clean, chunks = engine.prepare(NewMemory(body="Invoice builder, now short."))
    store.replace_body(long, clean, chunks, engine.embed(chunks))
    assert len(store.chunks_of(long)) == 1
    assert_consistent(store)

    engine.forget(long)
    assert_consistent(store)
    assert store.counts()["memories"] == 1
    assert all(h.memory.id == short for h in engine.recall("invoice builder tier", record=False).hits)


def test_a_failed_write_leaves_nothing_behind(engine):
    engine.remember(NewMemory(body="first note"))
    before = engine.store.counts()
    clean, chunks = engine.prepare(NewMemory(body="second note"))
    wrong = np.ones((len(chunks), 8), dtype=np.float32)  # the vector table holds 384-d vectors
    with pytest.raises(sqlean.OperationalError, match="Dimension mismatch"):
        engine.store.add(clean, chunks, wrong)
    assert engine.store.counts() == before
    assert_consistent(engine.store)


# -- scope ---------------------------------------------------------------------------------------


@pytest.fixture
def scoped(engine):
    ids = {
        "x": engine.remember(NewMemory(body="deploy checklist for the pricing service", project="/repos/x")),
        "y": engine.remember(NewMemory(body="deploy checklist for the search service", project="/repos/y")),
        "personal": engine.remember(NewMemory(body="my own deploy checklist habits")),
    }
    return engine, ids


@pytest.mark.parametrize("legs", [("vector", "keyword"), ("vector",), ("keyword",)])
def test_recall_searches_the_callers_project_and_personal_notes(scoped, legs):
    engine, ids = scoped
    found = {h.memory.id for h in engine.recall("deploy checklist", project="/repos/x", legs=legs, record=False).hits}
    assert found == {ids["x"], ids["personal"]}
    outside = {h.memory.id for h in engine.recall("deploy checklist", project=None, legs=legs, record=False).hits}
    assert outside == {ids["personal"]}
    everything = engine.recall("deploy checklist", project="/repos/x", all_projects=True, legs=legs, record=False)
    assert {h.memory.id for h in everything.hits} == set(ids.values())


@pytest.mark.parametrize("legs", [("vector", "keyword"), ("vector",), ("keyword",)])
def test_a_small_project_is_not_starved_by_a_big_one(engine, legs):
    text = "quarterly close runbook: lock the period, export the ledger, reconcile payouts"
    big = [NewMemory(body=f"{text} (step {i})", project="/repos/big") for i in range(200)]
    engine.remember_many(big)
    small = [engine.remember(NewMemory(body=f"{text} (small {i})", project="/repos/small")) for i in range(3)]
    result = engine.recall("quarterly close runbook ledger", project="/repos/small", legs=legs, record=False)
    assert {h.memory.id for h in result.hits} == set(small)
    assert result.pool_size <= 2 * PROFILES["v2"].candidates_per_leg


def test_candidates_per_leg_and_result_limit_come_from_the_environment(engine, monkeypatch):
    engine.remember_many([NewMemory(body=f"ledger export step {i}") for i in range(40)])
    assert len(engine.recall("ledger export", record=False).hits) == 10
    for leg in ("vector", "keyword"):
        assert engine.recall("ledger export", legs=(leg,), record=False).pool_size == 25
    monkeypatch.setenv("CAPTAIN_MEMO_CANDIDATES_PER_LEG", "5")
    monkeypatch.setenv("CAPTAIN_MEMO_RESULT_LIMIT", "3")
    for leg in ("vector", "keyword"):
        assert engine.recall("ledger export", legs=(leg,), record=False).pool_size == 5
    result = engine.recall("ledger export", record=False)
    assert 5 <= result.pool_size <= 10 and len(result.hits) == 3
    assert len(engine.recall("ledger export", limit=4, record=False).hits) == 4


# -- supersession and Tide over the real store ----------------------------------------------------


def test_a_superseded_memory_is_demoted_and_still_returned(engine):
    old = engine.remember(NewMemory(body="Production runs version 2.4.0"))
    new = engine.remember(NewMemory(body="Production runs version 2.5.0"))
    engine.supersede(old, new)
    hits = {h.memory.id: h for h in engine.recall("production version", record=False).hits}
    assert set(hits) == {old, new}
    assert [(f.name, f.value) for f in hits[old].factors if f.name == "superseded"] == [("superseded", 0.5)]
    assert_trace(hits.values())
    engine.unsupersede(old)
    hits = {h.memory.id: h for h in engine.recall("production version", record=False).hits}
    assert hits[old].factor("superseded") == 1.0


@pytest.mark.parametrize("how, gain", [("auto", 0.5), ("search", 1.0)])
def test_a_recall_strengthens_what_it_returns(engine, how, gain):
    mid = engine.remember(NewMemory(body="outbox worker picked up a webhook twice", kind="observation"))
    before = time.time()
    engine.recall("outbox webhook", how=how, profile="v2")
    m = engine.store.get(mid)
    assert m.stability == pytest.approx(lifecycle.strengthened(7.0, gain, PROFILES["v2"]))
    assert m.last_surfaced >= before and not m.opened_in_full


def test_opening_in_full_is_the_strongest_surfacing_and_stops_demotion(engine):
    mid = engine.remember(
        NewMemory(body="outbox worker picked up a webhook twice", kind="observation", created_at=days_ago(300))
    )
    first = engine.recall("outbox webhook", record=False, profile="v2").hits[0]
    assert 0.30 <= first.factor("tide") < 0.5
    shown = engine.show(mid, PROFILES["v2"])
    assert shown.opened_in_full and shown.stability == pytest.approx(lifecycle.strengthened(7.0, 1.5, PROFILES["v2"]))
    # Even once it has gone unseen for a long time again, an opened observation is not demoted.
    with engine.store.write() as conn:
        conn.execute("UPDATE memories SET last_surfaced = ? WHERE id = ?", (days_ago(400), mid))
    assert engine.recall("outbox webhook", record=False, profile="v2").hits[0].factor("tide") == 1.0


def test_recall_without_recording_changes_nothing(engine):
    mid = engine.remember(NewMemory(body="outbox worker picked up a webhook twice", kind="observation"))
    engine.recall("outbox webhook", record=False)
    assert engine.store.get(mid).stability == 7.0 and engine.store.get(mid).last_surfaced is None


# -- the cut comes last ----------------------------------------------------------------------------


def test_the_cut_comes_after_tide(db_file):
    """Ten stale captures are closer in meaning than the one observation that holds the exact answer.

    Before Tide they fill the top 10 (0.90 against 0.72 × 1.15 = 0.83); Tide demotes the
    two-year-old captures more than the near-dormant answer (×0.34 against ×0.52), so only a cut
    made after Tide returns it. Moving the cut before Tide loses it.
    """
    dim = 16
    query = "kestrel failover"
    answer = "kestrel failover: promote the replica in eu-west, then repoint billing-db"
    stale = [f"stale capture {i}: thoughts on disaster recovery for the database" for i in range(10)]
    table = {query: at_similarity(1.0, 1, dim), answer: at_similarity(0.60, 1, dim)}
    table.update({text: at_similarity(0.90, 2 + i, dim) for i, text in enumerate(stale)})
    engine = Engine(Store(db_file), TableEmbedder(table, dim))
    try:
        for text in stale:
            engine.remember(NewMemory(body=text, chunks=(text,), kind="observation", created_at=days_ago(730)))
        # 99 days unseen at S = 7: buoyancy 0.32, just above the dormant line.
        answer_id = engine.remember(
            NewMemory(body=answer, chunks=(answer,), kind="observation", created_at=days_ago(99))
        )
        result = engine.recall(query, limit=10, record=False, profile="v2")
        assert answer_id in [h.memory.id for h in result.hits]
        hit = next(h for h in result.hits if h.memory.id == answer_id)
        assert hit.keyword == 1.0 and 0.5 < hit.factor("tide") < 0.55
        assert lifecycle.buoyancy(99, 7.0, PROFILES["v2"]) == pytest.approx(0.32, abs=0.005)
        assert_trace(result.hits)
        # The same pool cut before Tide would not contain it:
        no_tide = engine.recall(query, limit=10, record=False, cfg=replace(PROFILES["v2"], tide=False))
        assert answer_id not in [h.memory.id for h in no_tide.hits]
    finally:
        engine.close()


def test_stats_counts_the_tide_states(engine, db_file, capsys, monkeypatch):
    from captain_memo.cli import main as cli

    monkeypatch.setenv("CAPTAIN_MEMO_RANK_PROFILE", "v2")
    engine.remember(NewMemory(body="fresh capture about payouts", kind="observation"))
    engine.remember(NewMemory(body="old capture about refunds", kind="observation", created_at=days_ago(400)))
    strong = engine.remember(NewMemory(body="capture about chargebacks", kind="observation"))
    engine.remember(NewMemory(body="a curated decision", kind="memory", created_at=days_ago(400)))
    engine.show(strong, PROFILES["v2"])
    assert cli.main(["--db", str(db_file), "stats", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tide"] == {"strengthening": 1, "active": 2, "dormant": 1}
    assert data["observation"] == 3 and data["memory"] == 1


def test_initial_stability_comes_from_the_environment(db_file, monkeypatch, hash_embedder):
    monkeypatch.setenv("CAPTAIN_MEMO_TIDE_INITIAL_STABILITY", "3")
    engine = Engine.open(db_file, hash_embedder)
    try:
        mid = engine.remember(NewMemory(body="a casual capture", kind="observation"))
        assert engine.store.get(mid).stability == 3.0
    finally:
        engine.close()


LOCK_HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")  # a write never finished: a process stopped inside it
print("held", flush=True)
sys.stdin.read()
"""


def lock_held_by_another_process(path, embedder, monkeypatch):
    """A store with one memory, "Backups", whose write lock a child process holds (Popen): busy
    timeouts of 0.3 s, so the old code fails in seconds, not minutes. Another process, as SQLite's
    locks are per process: a connection of this one would not block."""
    import subprocess
    import sys

    from captain_memo.memo import Memo
    from captain_memo.records import NewMemory
    from captain_memo.store import db

    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 300)
    with Memo.open(path, embedder) as memo:
        memo.remember(NewMemory(body="Backups run at 02:00 and are kept 35 days.", kind="memory", title="Backups"))
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_recall_is_answered_while_another_process_holds_the_write_lock(tmp_path, hash_embedder, monkeypatch, caplog):
    """Another process holds the store's write lock (stopped with SIGSTOP inside a write, or a long
    import): a command that only reads opens the store and recalls without waiting for it; the
    recall's Tide record is skipped and logged, not waited for. Before, opening the store took the
    write lock to look for migrations, and a recall failed with "database is locked"."""
    from captain_memo.memo import Memo
    from captain_memo.records import RecallRequest

    path = tmp_path / "memo.db"
    holder = lock_held_by_another_process(path, hash_embedder, monkeypatch)
    try:
        with Memo.open(path, hash_embedder) as memo, caplog.at_level("INFO", logger="captain_memo"):
            result = memo.recall(RecallRequest("how long are backups kept"))
    finally:
        holder.communicate("", timeout=30)
    assert [hit.memory.title for hit in result.hits] == ["Backups"]
    assert "recall was not recorded for Tide" in caplog.text and "locked" in caplog.text


def test_a_write_names_a_stopped_process_holding_the_lock_instead_of_waiting_it_out(
    tmp_path, hash_embedder, monkeypatch
):
    """A process stopped inside a write (Ctrl-Z on a long import) holds the lock until it is
    resumed. Before, a remember waited out eight busy timeouts (about 80 s) and failed with
    "database is locked"; now it says which process, and how to let it finish."""
    import signal

    from captain_memo.errors import StoreError
    from captain_memo.memo import Memo
    from captain_memo.records import NewMemory

    path = tmp_path / "memo.db"
    holder = lock_held_by_another_process(path, hash_embedder, monkeypatch)
    try:
        holder.send_signal(signal.SIGSTOP)
        with Memo.open(path, hash_embedder) as memo, pytest.raises(StoreError) as refused:
            memo.remember(NewMemory(body="Restores are tested monthly.", kind="memory", title="Restores"))
    finally:
        holder.send_signal(signal.SIGCONT)
        holder.communicate("", timeout=30)
    message = str(refused.value)
    assert f"process {holder.pid} (" in message and "is stopped" in message, message
    assert f"kill -CONT {holder.pid}" in message, message
    with Memo.open(path, hash_embedder) as memo:  # resumed and ended: nothing was lost, the write goes through
        memo.remember(NewMemory(body="Restores are tested monthly.", kind="memory", title="Restores"))
        assert sorted(m.title for m in memo.store.list_memories()) == ["Backups", "Restores"]


def test_a_write_waits_for_a_running_holder_and_names_it(tmp_path, hash_embedder, monkeypatch, caplog):
    import threading

    from captain_memo.memo import Memo
    from captain_memo.records import NewMemory

    path = tmp_path / "memo.db"
    holder = lock_held_by_another_process(path, hash_embedder, monkeypatch)
    ending = threading.Timer(1.0, lambda: holder.communicate("", timeout=30))  # its write ends in a second
    ending.start()
    try:
        with Memo.open(path, hash_embedder) as memo, caplog.at_level("WARNING", logger="captain_memo"):
            memo.remember(NewMemory(body="Restores are tested monthly.", kind="memory", title="Restores"))
            assert sorted(m.title for m in memo.store.list_memories()) == ["Backups", "Restores"]
    finally:
        ending.join()
    assert f"waiting for process {holder.pid} (" in caplog.text and caplog.text.count("waiting for") == 1
