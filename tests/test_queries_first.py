"""A query's embedding goes before the rest of a long one (captain_memo/queries_first.py).

The inner embedder here is the deterministic hash embedder behind events, so the test decides
when each call ends: what is under test is the order of the calls, not the model."""

from __future__ import annotations

import threading

import numpy as np
from fakes import HashEmbedder

from captain_memo.queries_first import QueriesFirst


class Held:
    """HashEmbedder whose calls of ``held_size`` texts wait for ``release``; records every call."""

    def __init__(self, held_size: int):
        self.inner = HashEmbedder()
        self.model_id = self.inner.model_id
        self.held_size = held_size
        self.calls: list[int] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts):
        self.calls.append(len(texts))
        if len(texts) == self.held_size:
            self.entered.set()
            assert self.release.wait(10)
        return self.inner.embed(texts)


def test_a_long_embedding_waits_between_slices_while_a_query_is_embedded():
    held = Held(held_size=1)
    first = QueriesFirst(held, slice_size=4)
    texts = [f"chunk {i} " + "x" * i for i in range(12)]
    out = {}
    query = threading.Thread(target=lambda: out.setdefault("query", first.embed(["the query"])))
    query.start()  # held inside the model
    assert held.entered.wait(10)
    long = threading.Thread(target=lambda: out.setdefault("long", first.embed(texts)))
    long.start()
    long.join(0.3)
    assert long.is_alive() and held.calls == [1]  # no slice started while the query runs
    held.release.set()
    query.join(10)
    long.join(10)
    assert held.calls == [1, 4, 4, 4]
    assert np.allclose(out["long"], HashEmbedder().embed(texts))  # in the order asked
    assert first.model_id == held.model_id


def test_a_long_lived_holder_runs_the_local_model_without_a_memory_arena(tmp_path):
    """The editor's host and the service keep the model for hours: onnxruntime's CPU arena would
    keep the peak of their longest embedding all that time (embeddings/local.py ``long_lived``).
    A command that runs and exits keeps the arena (a long embedding is faster with it)."""
    from captain_memo.memo import Memo

    held, once = Memo.open(tmp_path / "held.db", warm=True), Memo.open(tmp_path / "once.db")
    try:
        held.prefer_queries()
        for memo in (held, once):
            memo.embedder.embed(["the arena question"])
        arenas = [model_of(memo.embedder)._session.get_session_options().enable_cpu_mem_arena for memo in (held, once)]
    finally:
        held.close()
        once.close()
    assert arenas == [False, True]


def model_of(embedder):
    """The local model inside the wrappers (queries first, prefixes)."""
    while "inner" in vars(embedder):
        embedder = embedder.inner
    return embedder


def test_the_local_models_threads_sleep_rather_than_spin(tmp_path, local_embedder):
    """Two processes embedding at once on two cores (an index beside the engine answering recalls)
    must not take each other's time with threads spinning for work (embeddings/local.py)."""
    local_embedder.embed(["a spinning question"])
    entry = local_embedder._session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning")
    assert entry == "0"
