"""Deterministic embedders for tests where the model itself is not under test."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from captain_memo.errors import EmbeddingError


class HashEmbedder:
    """Bag of lower-cased words hashed into a fixed dimension: texts sharing words are similar."""

    def __init__(self, dim: int = 384, model_id: str = "test:hash"):
        self.model_id = model_id
        self._dim = dim
        self.calls = 0
        self.texts_embedded = 0
        self.fail: Exception | None = None

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts):
        if self.fail is not None:
            raise self.fail
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()) or ["<empty>"]:
                digest = hashlib.blake2b(word.encode("utf-8", "replace"), digest_size=8).digest()
                out[row, int.from_bytes(digest[:4], "little") % self._dim] += 1.0
            out[row] /= np.linalg.norm(out[row])
        return out


class TableEmbedder:
    """Vectors chosen by the test: ``table`` maps a text to a unit vector (others: a fixed fallback)."""

    def __init__(self, table: dict[str, np.ndarray], dim: int, model_id: str = "test:table"):
        self.model_id = model_id
        self._dim = dim
        self.table = {k: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for k, v in table.items()}

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts):
        fallback = np.zeros(self._dim, dtype=np.float32)
        fallback[-1] = 1.0
        return np.stack([self.table.get(t, fallback) for t in texts])


def failing(message: str = "endpoint down") -> EmbeddingError:
    return EmbeddingError(message)
