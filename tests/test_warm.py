"""The store a long-lived process holds (captain_memo/hosting/warm_memo.py) follows the file it serves."""

from __future__ import annotations

import threading
import time

import pytest
from fakes import HashEmbedder

from captain_memo.errors import ModelMismatchError
from captain_memo.hosting.warm_memo import WarmMemo
from captain_memo.memo import Memo
from captain_memo.requests.operations import RecallRequest, RememberRequest
from captain_memo.store import Store
from captain_memo.store.reindex import reindex


def reindexed(db_file, embedder) -> None:
    store = Store(db_file)
    try:
        reindex(store, embedder, restart=True)
    finally:
        store.close()


def test_a_held_store_reopens_after_a_reindex_and_refuses_another_model(db_file, tmp_path):
    warm = WarmMemo(db_file, lambda path: Memo.open(path, HashEmbedder()))
    ask = RecallRequest("zanzibar tenant cache", cwd=str(tmp_path))
    try:
        saved = warm.remember(RememberRequest("The zanzibar cache key includes the tenant id.", cwd=str(tmp_path)))
        assert warm.recall(ask)["hits"][0]["id"] == saved["id"] and warm.reopened == 0

        reindexed(db_file, HashEmbedder())  # the same model into a new vector table
        answer = warm.recall(ask)
        assert warm.reopened == 1 and answer["legs"] == ["vector", "keyword"]
        assert answer["hits"][0]["id"] == saved["id"]

        reindexed(db_file, HashEmbedder(model_id="test:other"))
        with pytest.raises(ModelMismatchError, match="test:other"):
            warm.recall(ask)
    finally:
        warm.close()


def test_a_replaced_store_file_is_reopened(db_file, tmp_path):
    warm = WarmMemo(db_file, lambda path: Memo.open(path, HashEmbedder()))
    try:
        warm.remember(RememberRequest("a note in the first store", cwd=str(tmp_path)))
        db_file.rename(tmp_path / "moved-away.db")
        assert warm.recall(RecallRequest("first store", cwd=str(tmp_path)))["hits"] == []
        assert warm.reopened == 1
    finally:
        warm.close()


def test_a_recalls_tide_record_waits_for_the_next_write(db_file, tmp_path, monkeypatch):
    """Tide's record of a recall is no write of its own right behind the recall: that write met a
    backup being copied over the store (`cp` writes the file in pieces) and mixed two stores' pages.
    It goes with the next write, or at closing (or after TIDE_WAIT, set out of reach here)."""
    import sqlite3
    from contextlib import closing

    from captain_memo.hosting import warm_memo

    monkeypatch.setattr(warm_memo, "TIDE_WAIT", 3600.0)

    def surfaced(memory_id: int):
        with closing(sqlite3.connect(db_file)) as conn:
            return conn.execute("SELECT last_surfaced FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]

    warm = WarmMemo(db_file, lambda path: Memo.open(path, HashEmbedder()))
    ask = RecallRequest("zanzibar tenant cache", cwd=str(tmp_path))
    try:
        saved = warm.remember(RememberRequest("The zanzibar cache key includes the tenant id.", cwd=str(tmp_path)))
        before = surfaced(saved["id"])
        assert warm.recall(ask)["hits"][0]["id"] == saved["id"]
        warm._writer.submit(lambda: None).result()  # the writer has run whatever the recall queued
        assert surfaced(saved["id"]) == before, "the recall wrote its Tide record on its own"
        warm.remember(RememberRequest("An unrelated note about the build.", cwd=str(tmp_path)))
        after_write = surfaced(saved["id"])
        assert after_write != before, "the next write did not take the recall's Tide record with it"
        warm.recall(ask)
    finally:
        warm.close()
    assert surfaced(saved["id"]) != after_write, "closing dropped a recall's Tide record"


def test_the_holder_gives_freed_memory_back_once_idle(db_file, tmp_path, monkeypatch):
    """glibc keeps what a thread freed in that thread's arena: a 720 KB remember left a holder
    ~160 MB larger for its life, the warm-up 63 MB (doc/benchmarks.md section 15). Once no call
    has run for a moment the holder asks malloc_trim to give it back, on a thread of its own."""
    import captain_memo.hosting.freed_memory as freed_memory

    trims: list[int] = []
    monkeypatch.setattr(freed_memory, "_trim", trims.append)
    warm = WarmMemo(db_file, lambda path: Memo.open(path, HashEmbedder()))
    warm._idle.quiet = 0.05
    try:
        warm.remember(RememberRequest("The zanzibar cache key includes the tenant id.", cwd=str(tmp_path)))
        warm.recall(RecallRequest("zanzibar", cwd=str(tmp_path)))
        assert _eventually(lambda: trims == [0])
    finally:
        warm.close()


def _eventually(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_no_trim_while_a_call_runs_and_one_after_a_burst(monkeypatch):
    import captain_memo.hosting.freed_memory as freed_memory

    trims: list[int] = []
    monkeypatch.setattr(freed_memory, "_trim", trims.append)
    idle = freed_memory.IdleTrim(quiet=0.02)
    release = threading.Event()
    try:
        with idle.running():
            pass  # a call ended: a trim is owed
        holder = threading.Thread(target=lambda: _run_until(idle, release))
        holder.start()
        time.sleep(0.2)  # ten quiet periods pass while a call is in flight
        assert trims == []
        release.set()
        holder.join()
        for _ in range(5):  # a burst right after: still one trim, once it is over
            with idle.running():
                pass
        assert _eventually(lambda: idle.trims == 1)
        time.sleep(0.1)
        assert trims == [0]
    finally:
        idle.close()


def _run_until(idle, release: threading.Event) -> None:
    with idle.running():
        release.wait(10)


def test_no_trim_while_background_work_still_allocates(monkeypatch):
    """The in-memory index builds on its own thread after the store opens: trimming before it
    ends would leave what it frees later; the trim waits for it."""
    import captain_memo.hosting.freed_memory as freed_memory

    trims: list[int] = []
    monkeypatch.setattr(freed_memory, "_trim", trims.append)
    built = threading.Event()
    idle = freed_memory.IdleTrim(quiet=0.02, settled=built.is_set)
    try:
        with idle.running():
            pass
        time.sleep(0.2)
        assert trims == []
        built.set()
        assert _eventually(lambda: trims == [0])
    finally:
        idle.close()


def test_another_processs_embedding_gives_the_memory_it_took_back(db_file, monkeypatch):
    """An `index` embedding through the engine left the holder ~250 MB larger (482 texts of this
    repository's history): it is given back once the holder is idle, as a write's is."""
    import captain_memo.hosting.freed_memory as freed_memory

    trims: list[int] = []
    monkeypatch.setattr(freed_memory, "_trim", trims.append)
    warm = WarmMemo(db_file, lambda path: Memo.open(path, HashEmbedder()))
    warm._idle.quiet = 0.05
    try:
        vectors = warm.embed(lambda memo: memo.embed_long(["an indexed commit", "another one", "a third"]))
        assert vectors.shape == (3, 384) and _eventually(lambda: trims == [0])
    finally:
        warm.close()


def test_a_failed_trim_does_not_end_trimming(monkeypatch):
    import captain_memo.hosting.freed_memory as freed_memory

    trims: list[int] = []
    monkeypatch.setattr(freed_memory, "_trim", trims.append)
    failures = iter([RuntimeError("the store closed meanwhile")])

    def settled() -> bool:
        for failure in failures:
            raise failure
        return True

    idle = freed_memory.IdleTrim(quiet=0.02, settled=settled)
    try:
        with idle.running():
            pass
        time.sleep(0.2)  # the first idle spell: its check fails
        assert trims == []
        with idle.running():
            pass
        assert _eventually(lambda: trims == [0])
    finally:
        idle.close()
