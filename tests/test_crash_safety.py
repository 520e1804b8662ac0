"""SIGKILL at random points of a large `captain-memo import` or `index` never damages the store or
duplicates anything.

The real CLI runs in a child process (with the hash embedder, see reliability_support.py) and is
killed at a random moment after it started; after every kill the store is opened again, as the
next command would, and must pass `PRAGMA integrity_check`, the FTS5 integrity check and the
memories / chunks / FTS rows / vectors agreement. The next run of the same command continues the
import: what is already stored is skipped by its content hash, so nothing is duplicated. When a run
completes the import, the database is removed and a new import starts, until enough kills landed.
The index run is killed while it adds a folder of notes and again while it applies edits and
deletions, and must end exactly where an uninterrupted run ends.
"""

from __future__ import annotations

import json
import random
import signal
import time

import pytest
from reliability_support import agreement, assert_consistent, spawn

RECORDS = 1000
KILLS = 24
MAX_DELAY_S = 0.6  # a full import of RECORDS takes ~0.6 s here (more on a busy machine), so kills land all over it


def write_records(path, count: int) -> None:
    kinds = ("memory", "skill", "observation")
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            text = f"imported record {i}: " + "the cache layer keeps entries for ten minutes. " * (1 + i % 40)
            out.write(json.dumps({"kind": kinds[i % 3], "title": f"record {i}", "text": text, "branch": "main"}) + "\n")


def run_cli(db, *args: str, kill_after: float | None):
    """Run a command; kill it ``kill_after`` seconds after it started. Returns (exit code, stdout, stderr)."""
    proc = spawn("cli", "--db", str(db), *args)
    assert proc.stdout.readline().strip() == "started"
    if kill_after is not None:
        time.sleep(kill_after)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def run_import(db, records, kill_after: float | None):
    """Returns (killed, stdout, stderr)."""
    code, out, err = run_cli(db, "import", str(records), kill_after=kill_after)
    return code == -signal.SIGKILL, out, err


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


INDEX_NOTES = 500
INDEX_KILLS = 12
# An edit round re-reads every note and re-indexes half of them: about this share of adding them all.
EDIT_SHARE = 0.6


def write_notes(folder, count: int, revision: int = 0) -> None:
    """``count`` notes; from revision 1 on, every other note's text depends on the revision."""
    folder.mkdir(exist_ok=True)
    for i in range(count):
        change = f" Revised ({revision}): entries now expire sooner." if revision and i % 2 == revision % 2 else ""
        (folder / f"note-{i:04}.md").write_text(
            f"# Note {i}\n\n## Context\n\n"
            + "The service keeps a cache for ten minutes. " * (5 + i % 20)
            + change
            + f"\n\n## Decision\n\nService {i} listens on port {8000 + i}.\n",
            encoding="utf-8",
        )


def stored_notes(db) -> set[tuple]:
    from captain_memo.store import Store

    store = Store(db)
    try:
        return set(store.conn.execute("SELECT source_path, source_key, title, content_hash FROM memories"))
    finally:
        store.close()


def run_index(db, folder, kill_after: float | None):
    code, _, err = run_cli(db, "index", str(folder), kill_after=kill_after)
    assert code in (0, -signal.SIGKILL) and "Traceback" not in err, err
    return code == -signal.SIGKILL


def index_seconds(db, folder) -> float:
    """How long an uninterrupted index run takes here, from its start to its end: kills drawn from
    a fixed span missed a run faster than it and landed after its work on a slower machine."""
    proc = spawn("cli", "--db", str(db), "index", str(folder))
    assert proc.stdout.readline().strip() == "started"
    began = time.monotonic()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return time.monotonic() - began


def killed_index_run(db, folder, rng, longest: float) -> bool:
    """One index run killed at a random moment; the store is checked whether or not the kill landed."""
    killed = run_index(db, folder, rng.uniform(0.0, longest))
    report = agreement(db)
    assert_consistent(report)
    assert report["chunks"] == report["fts_rows"] == report["vectors"] + report["pending"]
    return killed


@pytest.mark.slow
def test_sigkill_during_index_adds_edits_and_deletes_ends_like_an_uninterrupted_run(tmp_path):
    rng = random.Random(11)
    notes, db = tmp_path / "notes", tmp_path / "memo.db"
    write_notes(notes, INDEX_NOTES)
    span = index_seconds(tmp_path / "timing.db", notes)
    first = 0
    while first < INDEX_KILLS // 2:  # kills while the folder is first added
        if killed_index_run(db, notes, rng, span):
            first += 1
        elif first:
            break  # the folder is added
        else:
            remove_store(db)  # added before any kill landed: add it again

    # Then rounds of edits (half of the notes) and deletions (a few), each re-index killed.
    later, revision, count = 0, 0, INDEX_NOTES
    while later < INDEX_KILLS - first:
        revision, count = revision + 1, count - 10
        (notes / f"note-{count:04}.md").unlink()
        for i in range(count + 1, count + 10):
            (notes / f"note-{i:04}.md").unlink(missing_ok=True)
        write_notes(notes, count, revision)
        while later < INDEX_KILLS - first and killed_index_run(db, notes, rng, span * EDIT_SHARE):
            later += 1

    assert not run_index(db, notes, None)
    clean = tmp_path / "clean.db"
    assert not run_index(clean, notes, None)
    after = stored_notes(db)
    assert after == stored_notes(clean)  # exactly what an uninterrupted run stores
    assert len({key for _, key, _, _ in after}) == len(after) == 2 * count  # two sections a note, no duplicate
    report = agreement(db)
    assert_consistent(report)
    assert report["pending"] == 0
    print(f"{first + later} kills during index runs ({first} adding, {later} applying {revision} rounds of edits)")
