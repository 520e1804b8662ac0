"""The store a long-lived process holds (captain_memo/warm.py) follows the file it serves."""

from __future__ import annotations

import pytest
from fakes import HashEmbedder

from captain_memo.app import RecallRequest, RememberRequest
from captain_memo.errors import ModelMismatchError
from captain_memo.memo import Memo
from captain_memo.store import Store
from captain_memo.store.reindex import reindex
from captain_memo.warm import WarmMemo


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


def test_each_write_gives_the_memory_it_freed_back(db_file, tmp_path, monkeypatch):
    """glibc keeps what a thread freed in that thread's arena: a 720 KB remember left a holder
    ~160 MB larger for its life (doc/benchmarks.md section 15). After each write the holder asks
    malloc_trim to give it back; reads do not pay for it."""
    import captain_memo.warm as warm_module

    trims: list[int] = []
    monkeypatch.setattr(warm_module, "_trim", trims.append)
    warm = WarmMemo(db_file, lambda path: Memo.open(path, HashEmbedder()))
    try:
        warm.remember(RememberRequest("The zanzibar cache key includes the tenant id.", cwd=str(tmp_path)))
        warm.recall(RecallRequest("zanzibar", cwd=str(tmp_path)))
    finally:
        warm.close()
    assert trims == [0]


def test_another_processs_embedding_gives_the_memory_it_took_back(db_file, monkeypatch):
    """An `index` embedding through the engine left the holder ~250 MB larger (482 texts of this
    repository's history): each embed request is followed by malloc_trim, as a write is."""
    import captain_memo.warm as warm_module

    trims: list[int] = []
    monkeypatch.setattr(warm_module, "_trim", trims.append)
    warm = WarmMemo(db_file, lambda path: Memo.open(path, HashEmbedder()))
    try:
        vectors = warm.embed(lambda memo: memo.embed_long(["an indexed commit", "another one", "a third"]))
    finally:
        warm.close()
    assert vectors.shape == (3, 384) and trims == [0]
