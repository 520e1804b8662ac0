"""Chunks saved while the embedder was down get their vectors once it answers again.

The outage is the HashEmbedder's ``fail`` switch: the real-server versions of these faults are in
test_vector_faults.py; this file pins the engine's own catch-up paths.
"""

from fakes import failing

from captain_memo.store import NewMemory


def test_a_recall_that_reaches_the_embedder_fills_missing_vectors(engine, hash_embedder):
    engine.remember(NewMemory(body="ledger export runs nightly at two"))
    hash_embedder.fail = failing()
    saved = engine.remember(NewMemory(body="invoice_pdf renderer moved to the worker pool"))
    assert engine.store.counts()["pending_vectors"] == 1

    down = engine.recall("invoice_pdf")
    assert down.legs == ("keyword",)
    assert [h.memory.id for h in down.hits] == [saved]
    assert engine.store.counts()["pending_vectors"] == 1

    hash_embedder.fail = None
    up = engine.recall("invoice_pdf renderer")
    assert up.legs == ("vector", "keyword")
    counts = engine.store.counts()
    assert counts["pending_vectors"] == 0 and counts["vectors"] == counts["chunks"] == 2


def test_closing_the_engine_closes_the_embedder(engine, hash_embedder):
    closed = []
    hash_embedder.close = lambda: closed.append(True)
    engine.close()
    assert closed == [True]
