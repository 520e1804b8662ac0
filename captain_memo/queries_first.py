"""An embedder shared by a long-lived holder's readers and writer, where a query goes first.

A recall embeds one short query; a long remember embeds hundreds of chunks with the same model on
the same cores. Run side by side, the query shares the CPU with the remember's batches for its
whole run (a recall took 2.5 times as long during a 720 KB remember; doc/benchmarks.md section
14). Here a long embedding is cut into slices, and before each slice it waits while a query is
being embedded: a query waits for at most the slice running when it came.
"""

from __future__ import annotations

import threading

import numpy as np

QUERY_TEXTS = 2  # an embedding of this many texts or fewer is a query's (or a short note's)
SLICE = 8  # texts per slice of a long embedding: the local model's own batch


class QueriesFirst:
    """Wraps an embedder; everything but ``embed`` is the inner embedder's."""

    def __init__(self, inner, slice_size: int = SLICE):
        self.inner = inner
        self.slice_size = slice_size
        self._urgent = 0
        self._turn = threading.Condition()

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"QueriesFirst({self.inner!r})"

    def embed(self, texts):
        if len(texts) <= QUERY_TEXTS:
            with self._turn:
                self._urgent += 1
            try:
                return self.inner.embed(texts)
            finally:
                with self._turn:
                    self._urgent -= 1
                    self._turn.notify_all()
        # Slices of texts of similar length, as the local model batches them (less padding).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        parts = []
        for start in range(0, len(order), self.slice_size):
            with self._turn:
                self._turn.wait_for(lambda: self._urgent == 0)
            parts.append(self.inner.embed([texts[i] for i in order[start : start + self.slice_size]]))
        vectors = np.concatenate(parts)
        out = np.empty_like(vectors)
        out[order] = vectors
        return out
