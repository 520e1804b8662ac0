"""A bounded LRU of query embeddings, keyed by model and text: a repeated recall costs no call."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from captain_memo.embeddings.base import query_vectors


class QueryCache:
    def __init__(self, embedder, size: int = 1024):
        self.embedder = embedder
        self.size = size
        self._items: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embed_query(self, text: str) -> np.ndarray:
        key = (self.embedder.model_id, text)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
        vector = query_vectors(self.embedder, [text])[0]
        with self._lock:
            self.misses += 1
            self._items[key] = vector
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return vector
