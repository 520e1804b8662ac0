"""An embedder shared by a long-lived holder's readers and writer, where reads go first.

A recall embeds one short query; a long remember (or another process's `index`, through the
``embed`` request) embeds hundreds of chunks with the same model on the same cores. Run side by
side, the recall shares the CPU with the long embedding's batches for its whole run (a recall took
2.5 times as long during a 720 KB remember; doc/benchmarks.md section 14). Here a long embedding
is cut into slices, and before each slice it waits while a query is being embedded and while a
read is in flight (``reading``: the holder marks each recall from when it starts running to when
it ends, its search and ranking too): a recall shares the CPU with at most the slice running when
it came.

A slice waits for the reads in flight for at most ``max_wait`` (a quarter of a second, about ten
recalls' time): with recalls arriving back to back a long embedding still gets a slice in every
quarter second, so writes always progress. A query being embedded is waited for as before: that
takes milliseconds (one or two short texts), so it cannot hold a slice back for long either.

While no read is in flight a long embedding uses every core: where the inner embedder's runs are
independent (``runs_at_once``: the holder's local model, one thread a run), slices run at once on
that many threads. The calling thread runs them as above; each helper thread starts a slice only
while no read is in flight and no query is embedded (it waits without bound: the caller's slices
keep the embedding going), at the lowest priority (nice 19, Linux). A read that starts while a
helper's slice runs stops that slice where the inner embedder can (``stoppable``: onnxruntime's
terminate flag, checked between the model's steps) and the slice is run again later: the recall
finds the model running on one core at most, as before. At the lowest priority alone a helper's
slice under way still doubled the recalls' p95 during an index (2.0x-2.8x idle against 1.1x-1.3x
on one thread). Through the engine an index took 1.8x its own process's time on one thread
(doc/benchmarks.md section 17); the slices are the same batches, so every vector is the same,
bit for bit.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager, nullcontext

import numpy as np

from captain_memo.embeddings.base import query_vectors

QUERY_TEXTS = 2  # an embedding of this many texts or fewer is a query's (or a short note's)
SLICE = 8  # texts per slice of a long embedding: the local model's own batch
MAX_WAIT = 0.25  # seconds a slice waits at most for the reads in flight
HELPER_NICE = 19  # a helper thread's priority: the CPU nothing else wants


class QueriesFirst:
    """Wraps an embedder; everything but ``embed`` is the inner embedder's."""

    def __init__(self, inner, slice_size: int = SLICE, max_wait: float = MAX_WAIT):
        self.inner = inner
        self.slice_size = slice_size
        self.max_wait = max_wait
        self._urgent = 0  # queries being embedded
        self._reads = 0  # reads in flight (``reading``)
        self._own = threading.local()  # this thread's reads: a read's own long embedding (a
        # recall filling in missing vectors) does not wait for itself
        self.waiting = 0  # long embeddings waiting for their next slice's turn
        self._turn = threading.Condition()
        self._stops: set = set()  # how to stop each helper's slice under way
        self.stopped = 0  # helpers' slices stopped by a read (and run again)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"QueriesFirst({self.inner!r})"

    @contextmanager
    def reading(self):
        """A read in flight: no slice of a long embedding starts meanwhile (for up to ``max_wait``)."""
        with self._turn:
            self._reads += 1
            for stop in self._stops:  # the helpers' slices under way leave the cores to the read
                stop()
        self._own.reads = getattr(self._own, "reads", 0) + 1
        try:
            yield
        finally:
            self._own.reads -= 1
            with self._turn:
                self._reads -= 1
                self._turn.notify_all()

    def embed(self, texts):
        if len(texts) > QUERY_TEXTS:
            return self.embed_long(texts)
        return self._urgently(self.inner.embed, texts)

    def embed_queries(self, texts):
        """A recall's query: urgent, as a short embedding is (the inner embedder's own query form)."""
        if len(texts) > QUERY_TEXTS:
            return self.embed_long(texts, query_vectors)
        return self._urgently(lambda batch: query_vectors(self.inner, batch), texts)

    def _urgently(self, embed, texts):
        with self._turn:
            self._urgent += 1
        try:
            return embed(texts)
        finally:
            with self._turn:
                self._urgent -= 1
                self._turn.notify_all()

    def embed_long(self, texts, embed_with=None):
        """``texts`` embedded as a long embedding whatever their number: slice by slice, each
        after the reads in flight (another process's texts, which never answer a query), on as
        many threads at once as the inner embedder runs while no read is in flight."""
        embed = self.inner.embed if embed_with is None else (lambda batch: embed_with(self.inner, batch))
        # Slices of texts of similar length, as the local model batches them (less padding).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        slices = [
            [texts[i] for i in order[start : start + self.slice_size]]
            for start in range(0, len(order), self.slice_size)
        ]
        if not slices:
            return embed([])
        job = _Slices(slices)
        helpers = [
            threading.Thread(target=self._help, args=(job, embed), name="captain-memo-embed-helper", daemon=True)
            for _ in range(min(self._runs_at_once(), len(slices)) - 1)
        ]
        for helper in helpers:
            helper.start()
        try:
            self._run_slices(job, embed)
        finally:
            with self._turn:
                job.ended = True  # helpers still waiting for their turn take no more slices
                self._turn.notify_all()
            for helper in helpers:
                helper.join()
        self._run_slices(job, embed)  # slices a helper's was stopped after the caller's last
        vectors = job.vectors()
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    def _run_slices(self, job: _Slices, embed) -> None:
        """The caller's slices: each after its turn (``_wait_for_turn``), never stopped."""
        while job.left():
            self._wait_for_turn()
            k = job.take()
            if k is None:
                return
            try:
                job.parts[k] = embed(job.slices[k])
            except BaseException as exc:
                job.fail(exc)
                raise

    def _runs_at_once(self) -> int:
        """Slices run at once while no read is in flight: the inner embedder's ``runs_at_once``
        (set by the local model's ``long_lived``), else one."""
        runs = getattr(self.inner, "runs_at_once", 1)
        return runs if isinstance(runs, int) and runs > 1 else 1

    def _help(self, job: _Slices, embed) -> None:
        """A helper thread's slices: each started only while no read is in flight, and stopped
        (and given back) when a read starts while it runs."""
        lower_priority()
        stoppable = getattr(self.inner, "stoppable", None)
        while True:
            with self._turn:
                self._turn.wait_for(lambda: job.ended or (self._reads == 0 and self._urgent == 0))
                if job.ended or (k := job.take()) is None:
                    return
            with stoppable() if stoppable is not None else nullcontext() as stop:
                with self._turn:
                    if self._reads or self._urgent:  # a read came as the slice was taken
                        job.give_back(k)
                        continue
                    if stop is not None:
                        self._stops.add(stop)
                try:
                    job.parts[k] = embed(job.slices[k])
                except BaseException as exc:
                    if stop is not None and stop.stopped:
                        job.give_back(k)
                        self.stopped += 1
                        continue
                    job.fail(exc)
                    return
                finally:
                    with self._turn:
                        self._stops.discard(stop)

    def _wait_for_turn(self) -> None:
        """Wait for the reads in flight (``max_wait`` at most), then for the query being embedded."""
        with self._turn:
            self.waiting += 1
            try:
                until = time.monotonic() + self.max_wait
                own = getattr(self._own, "reads", 0)
                while self._reads > own and (left := until - time.monotonic()) > 0:
                    self._turn.wait(left)
                # A query's own embedding (milliseconds) is always waited for, as it was before
                # the reads were: a recall's query never shares the model with a slice it came before.
                self._turn.wait_for(lambda: self._urgent == 0)
            finally:
                self.waiting -= 1


class _Slices:
    """The slices of one long embedding, taken one at a time by the threads embedding them."""

    def __init__(self, slices: list[list[str]]):
        self.slices = slices
        self.parts: list = [None] * len(slices)
        self._pending = deque(range(len(slices)))
        self.ended = False  # the caller takes no more slices (none left, or one failed)
        self.failure: BaseException | None = None
        self._lock = threading.Lock()

    def left(self) -> bool:
        return bool(self._pending) and self.failure is None

    def take(self) -> int | None:
        """The next slice's number, or None when none is left (or one failed)."""
        with self._lock:
            return self._pending.popleft() if self._pending and self.failure is None else None

    def give_back(self, k: int) -> None:
        """Slice ``k`` stopped or not started: the next to take it runs it."""
        with self._lock:
            self._pending.appendleft(k)

    def fail(self, exc: BaseException) -> None:
        with self._lock:
            self.failure = self.failure or exc

    def vectors(self) -> np.ndarray:
        if self.failure is not None:
            raise self.failure
        return np.concatenate(self.parts)


def lower_priority() -> None:
    """This thread at the lowest priority (Linux, where a thread's nice value is its own); as it
    is elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HELPER_NICE)
    except OSError:  # refused (a sandbox): the helper runs at the caller's priority
        pass
