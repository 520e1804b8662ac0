"""A query's embedding goes before the rest of a long one (captain_memo/embeddings/reads_first.py).

The inner embedder here is the deterministic hash embedder behind events, so the test decides
when each call ends: what is under test is the order of the calls, not the model."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np
import pytest
from fakes import HashEmbedder

from captain_memo.embeddings.reads_first import QueriesFirst


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


def test_a_long_lived_holder_runs_the_local_model_on_one_thread(tmp_path):
    """A long embedding in the holder leaves the other core to the recalls beside it, and runs a
    slice on each core while no recall runs; a command that runs and exits uses onnxruntime's
    default (every core)."""
    from captain_memo.embeddings.local import cores
    from captain_memo.memo import Memo

    held, once = Memo.open(tmp_path / "held.db", warm=True), Memo.open(tmp_path / "once.db")
    try:
        held.prefer_queries()
        for memo in (held, once):
            memo.embedder.embed(["the thread question"])
        threads = [model_of(memo.embedder)._session.get_session_options().intra_op_num_threads for memo in (held, once)]
        runs = [model_of(memo.embedder).runs_at_once for memo in (held, once)]
    finally:
        held.close()
        once.close()
    assert threads == [1, 0]
    assert runs == [cores(), 1]


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


class Recording:
    """HashEmbedder noting each call's size in ``events``, beside what the test notes there."""

    def __init__(self, events: list):
        self.inner = HashEmbedder()
        self.model_id = self.inner.model_id
        self.events = events

    def embed(self, texts):
        self.events.append(len(texts))
        return self.inner.embed(texts)


def wait_until(condition) -> None:
    """Poll ``condition`` (a guard against hanging, never a measure: the test asserts an order)."""
    import time

    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_no_slice_of_a_long_embedding_starts_while_a_read_is_in_flight():
    """A read in flight (a recall's search and ranking, not only its query's embedding) holds the
    next slice back: the slices come after the read ends."""
    events: list = []
    first = QueriesFirst(Recording(events), slice_size=4, max_wait=60)
    texts = [f"chunk {i} " + "x" * i for i in range(12)]
    long = threading.Thread(target=first.embed, args=(texts,))
    with first.reading():
        long.start()
        wait_until(lambda: first.waiting == 1 or events)  # at its first slice's turn, or embedding
        events.append("the read ends")
    long.join(30)
    assert events == ["the read ends", 4, 4, 4]


def test_a_slice_waits_for_the_reads_no_longer_than_its_bound():
    """Reads arriving back to back never stop a long embedding: each slice starts after at most
    ``max_wait``, here while one read stays in flight from before the embedding to after it."""
    events: list = []
    first = QueriesFirst(Recording(events), slice_size=4, max_wait=0.01)
    texts = [f"chunk {i}" for i in range(12)]
    out = {}
    long = threading.Thread(target=lambda: out.setdefault("long", first.embed(texts)))
    with first.reading():
        long.start()
        long.join(30)
        events.append("the read ends")
    assert events == [4, 4, 4, "the read ends"]
    assert np.allclose(out["long"], HashEmbedder().embed(texts))


def test_the_holder_marks_each_read_for_its_whole_run(tmp_path):
    """Through WarmMemo, as the service and the editor's host run them: a read call in flight, from
    its start to its end, holds back the slices of another process's texts (the ``embed`` request)."""
    from captain_memo.hosting.warm_memo import WarmMemo
    from captain_memo.memo import Memo

    events: list = []

    def opened(path):
        memo = Memo.open(path, Recording(events))
        memo.prefer_queries()
        memo.embedder.max_wait = 60
        return memo

    warm = WarmMemo(tmp_path / "memo.db", opened)
    try:
        warm.warm_up()
        events.clear()
        texts = [f"an indexed commit {i}" for i in range(12)]

        started = threading.Event()

        def read(memo):
            started.set()
            wait_until(lambda: memo.embedder.waiting == 1 or events)
            events.append("the read ends")

        reading = warm.submit(read)
        assert started.wait(30)
        embedded = warm.embed(lambda memo: memo.embed_long(texts))
        reading.result(30)
        assert events == ["the read ends", 8, 4]
        assert np.allclose(embedded, HashEmbedder().embed(texts))
    finally:
        warm.close()


def test_a_recalls_query_is_urgent_as_the_engine_embeds_it():
    """The engine embeds a recall's query through ``embed_queries`` (embeddings/base.py
    query_vectors); that went straight to the model, so no slice waited for it."""
    from captain_memo.embeddings.cache import QueryCache

    held = Held(held_size=1)
    held.embed_queries = held.embed  # as the local model has it
    first = QueriesFirst(held, slice_size=4)
    query = threading.Thread(target=lambda: QueryCache(first).embed_query("the query"))
    query.start()  # held inside the model
    assert held.entered.wait(10)
    long = threading.Thread(target=lambda: first.embed([f"chunk {i}" for i in range(8)]))
    long.start()
    long.join(0.3)
    assert long.is_alive() and held.calls == [1]  # no slice started while the query runs
    held.release.set()
    query.join(10)
    long.join(10)
    assert held.calls == [1, 4, 4]


def test_a_reads_own_long_embedding_does_not_wait_for_itself():
    """A recall fills in vectors missing since an outage (up to 256 texts) inside its own read:
    each slice waited out the bound for that very read, 8 s for one recall."""
    first = QueriesFirst(HashEmbedder(), slice_size=4, max_wait=3600)
    done = threading.Event()

    def recall_with_backfill():
        with first.reading():
            first.embed([f"chunk {i}" for i in range(12)])
        done.set()

    reader = threading.Thread(target=recall_with_backfill, daemon=True)
    reader.start()
    assert done.wait(30), "the read's own slices waited for the read"


class TwoAtOnce:
    """HashEmbedder declaring two runs at once (as the holder's local model does, ``long_lived``);
    its calls of more than one text wait until two are inside at once, or until ``alone`` is set."""

    runs_at_once = 2

    def __init__(self):
        self.inner = HashEmbedder()
        self.model_id = self.inner.model_id
        self.both_in = threading.Barrier(2)
        self.alone = threading.Event()
        self.threads: list[tuple[int, int]] = []  # (thread id, its nice value) of each slice
        self._lock = threading.Lock()

    def embed(self, texts):
        import os

        with self._lock:
            self.threads.append((threading.get_ident(), os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        if len(texts) > 1 and not self.alone.is_set():
            try:
                self.both_in.wait(30)
            except threading.BrokenBarrierError:
                pass
        return self.inner.embed(texts)


def test_a_long_embedding_runs_its_slices_on_every_core_while_no_read_is_in_flight():
    """Two slices at once where the inner embedder runs two at once (the barrier lets them through
    only together); the helper thread runs at a lower priority; the vectors are in the order asked."""
    import sys

    inner = TwoAtOnce()
    first = QueriesFirst(inner, slice_size=4)
    texts = [f"chunk {i} " + "x" * i for i in range(16)]
    out = first.embed(texts)
    assert np.allclose(out, HashEmbedder().embed(texts))
    assert not inner.both_in.broken  # every pair of slices met inside the model
    assert len({thread for thread, _ in inner.threads}) == 2
    if sys.platform.startswith("linux"):  # where a thread's nice value is its own
        assert {nice for thread, nice in inner.threads if thread != threading.get_ident()} == {19}


def test_while_a_read_is_in_flight_a_long_embedding_runs_one_slice_at_a_time():
    """The helper starts no slice while a recall runs: the caller's slices go on alone, one at a
    time (each after ``max_wait``, here none)."""
    inner = TwoAtOnce()
    inner.alone.set()  # no slice waits for a second one
    first = QueriesFirst(inner, slice_size=4, max_wait=0)
    in_flight, ended = threading.Event(), threading.Event()

    def recall():
        with first.reading():
            in_flight.set()
            assert ended.wait(30)

    reader = threading.Thread(target=recall)
    reader.start()
    assert in_flight.wait(30)
    texts = [f"chunk {i}" for i in range(12)]
    out = first.embed(texts)
    ended.set()
    reader.join(30)
    assert [thread for thread, _ in inner.threads] == [threading.get_ident()] * 3  # the caller's, every slice
    assert np.allclose(out, HashEmbedder().embed(texts))


def test_a_slice_failing_on_a_helper_thread_fails_the_embedding():
    from captain_memo.errors import EmbeddingError

    class FailsOnHelper(TwoAtOnce):
        def __init__(self):
            super().__init__()
            self.caller = threading.get_ident()

        def embed(self, texts):
            if threading.get_ident() != self.caller:
                self.both_in.abort()  # the caller's slice waits no longer
                raise EmbeddingError("the model failed")
            return super().embed(texts)

    first = QueriesFirst(FailsOnHelper(), slice_size=4)
    with pytest.raises(EmbeddingError, match="the model failed"):
        first.embed([f"chunk {i}" for i in range(16)])


class StopsOnRead(TwoAtOnce):
    """Two runs at once, stoppable as the local model's are (``stoppable``): a helper's first slice
    stays inside the model until it is stopped, then fails as onnxruntime's terminated run does."""

    def __init__(self):
        super().__init__()
        self.alone.set()
        self.helper_inside = threading.Event()
        self.stop_asked = threading.Event()

    @contextmanager
    def stoppable(self):
        stop = FakeStop(self.stop_asked)
        yield stop

    def embed(self, texts):
        if threading.current_thread().name == "captain-memo-embed-helper" and not self.helper_inside.is_set():
            self.helper_inside.set()
            assert self.stop_asked.wait(30)
            raise RuntimeError("Exiting due to terminate flag being set to true.")
        return super().embed(texts)


class FakeStop:
    def __init__(self, asked: threading.Event):
        self.asked = asked
        self.stopped = False

    def __call__(self) -> None:
        self.stopped = True
        self.asked.set()


def test_a_read_starting_stops_a_helpers_slice_under_way_and_the_slice_runs_again():
    """A recall that comes while a helper's slice runs takes the core back at once: the slice is
    stopped (onnxruntime's terminate flag for the local model) and run again, and every vector is
    there, in the order asked."""
    inner = StopsOnRead()
    first = QueriesFirst(inner, slice_size=4, max_wait=0)
    texts = [f"chunk {i} " + "x" * i for i in range(16)]
    out = {}
    long = threading.Thread(target=lambda: out.setdefault("long", first.embed(texts)))
    long.start()
    assert inner.helper_inside.wait(30)
    with first.reading():
        assert inner.stop_asked.wait(30), "the read did not stop the helper's slice"
    long.join(30)
    assert first.stopped == 1
    assert np.allclose(out["long"], HashEmbedder().embed(texts))


def test_the_local_models_run_is_stopped_by_its_stop(local_embedder):
    """onnxruntime's terminate flag, as ``stoppable`` sets it from another thread, ends the run."""
    with local_embedder.stoppable() as stop:
        stop()
        with pytest.raises(Exception, match="terminate"):
            local_embedder.embed(["a slice stopped before it ran"])
    assert local_embedder.embed(["and the next one runs"]).shape == (1, 384)
