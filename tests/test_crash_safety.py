"""SIGKILL at random points of a large `captain-memo import` never damages the store or duplicates.

The real CLI runs in a child process (with the hash embedder, see reliability_support.py) and is
killed at a random moment after it started; after every kill the store is opened again, as the
next command would, and must pass `PRAGMA integrity_check`, the FTS5 integrity check and the
memories / chunks / FTS rows / vectors agreement. The next run of the same command continues the
import: what is already stored is skipped by its content hash, so nothing is duplicated. When a run
completes the import, the database is removed and a new import starts, until enough kills landed.
"""

from __future__ import annotations

import json
import random
import signal
import time

import pytest

from reliability_support import agreement, assert_consistent, spawn

RECORDS = 2000
KILLS = 24
MAX_DELAY_S = 1.2  # a full import of RECORDS takes ~2-3 s here, so kills land all over it


def write_records(path, count: int) -> None:
    kinds = ("memory", "skill", "observation")
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            text = f"imported record {i}: " + "the cache layer keeps entries for ten minutes. " * (1 + i % 40)
            out.write(json.dumps({"kind": kinds[i % 3], "title": f"record {i}", "text": text, "branch": "main"}) + "\n")


def run_import(db, records, kill_after: float | None):
    """Run the import; kill it ``kill_after`` seconds after it started. Returns (killed, stdout, stderr)."""
    proc = spawn("cli", "--db", str(db), "import", str(records))
    assert proc.stdout.readline().strip() == "started"
    if kill_after is not None:
        time.sleep(kill_after)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    return proc.returncode == -signal.SIGKILL, out, err


def remove_store(db) -> None:
    for suffix in ("", "-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)


@pytest.mark.slow
def test_sigkill_during_import_leaves_a_consistent_store_and_rerun_completes(tmp_path):
    rng = random.Random(7)
    records = tmp_path / "notes.jsonl"
    write_records(records, RECORDS)
    db = tmp_path / "memo.db"
    kills = partial = completed = 0
    before = 0
    while kills < KILLS:
        killed, _, err = run_import(db, records, rng.uniform(0.0, MAX_DELAY_S))
        report = agreement(db)
        assert_consistent(report)
        assert report["memories"] == report["distinct_hashes"], "a rerun stored a duplicate"
        assert report["chunks"] == report["fts_rows"] == report["vectors"] + report["pending"]
        assert report["memories"] >= before, "a kill lost memories that were already stored"
        if killed:
            kills += 1
            partial += 0 < report["memories"] < RECORDS
            before = report["memories"]
        else:
            assert "Traceback" not in err, err
            assert report["memories"] == RECORDS
            completed += 1
            remove_store(db)
            before = 0

    # The last interrupted import, run again to the end: everything once, nothing twice.
    killed, out, err = run_import(db, records, None)
    assert not killed and "Traceback" not in err, err
    assert "already present" in out
    report = agreement(db)
    assert_consistent(report)
    assert report["memories"] == report["distinct_hashes"] == RECORDS
    assert report["pending"] == 0
    assert partial >= KILLS // 2, f"only {partial} of {kills} kills interrupted a partly done import"
    print(f"{kills} kills, {partial} with the import partly done, {completed} imports completed between them")
