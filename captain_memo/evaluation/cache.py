"""A disk cache of embeddings keyed by model id and text hash, so a corpus is embedded once.

One small SQLite file per cache folder (default ``$XDG_CACHE_HOME/captain-memo/embeddings``).
Vectors of two models never mix: the model id is part of the key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from captain_memo.base.progress import Progress
from captain_memo.embeddings.base import query_vectors
from captain_memo.store.embedding_cache import EmbeddingCache, default_cache_dir, text_hash

__all__ = ["CachedEmbedder", "EmbeddingCache", "default_cache_dir", "text_hash"]

# Texts embedded per model call while filling the cache; also how often progress is committed.
FILL_BATCH = 64


class CachedEmbedder:
    """An embedder that serves cached vectors and embeds (and caches) only the texts it has not seen.

    It has the wrapped embedder's ``model_id`` and ``dim``, so a store filled through it is
    indistinguishable from one filled by the model itself.
    """

    def __init__(self, inner, cache: EmbeddingCache, progress: bool = True):
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.progress = progress
        self.embedded = 0  # texts that missed the cache and went to the model

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(texts, self.model_id, self.inner.embed)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        # A query may be embedded with another prefix than the same text as a document.
        return self._cached(texts, self.model_id + " queries", lambda batch: query_vectors(self.inner, batch))

    def _cached(self, texts: Sequence[str], key: str, embed) -> np.ndarray:
        hashes = [text_hash(t) for t in texts]
        found = self.cache.get_many(key, hashes)
        missing = {d: t for d, t in zip(hashes, texts) if d not in found}
        if missing:
            found.update(self._fill(missing, key, embed))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[d] for d in hashes]).astype(np.float32, copy=False)

    def _fill(self, missing: dict[str, str], key: str, embed) -> dict[str, np.ndarray]:
        items = list(missing.items())
        bar = Progress(len(items), f"embedding ({self.model_id})") if self.progress and len(items) > 1 else None
        out: dict[str, np.ndarray] = {}
        # Shortest first: batches of similar length waste less padding.
        items.sort(key=lambda item: len(item[1]))
        for start in range(0, len(items), FILL_BATCH):
            part = items[start : start + FILL_BATCH]
            vectors = embed([text for _, text in part])
            pairs = [(digest, vectors[i]) for i, (digest, _) in enumerate(part)]
            self.cache.put_many(key, pairs)
            out.update(pairs)
            self.embedded += len(part)
            if bar:
                bar.advance(len(part))
        if bar:
            bar.close()
        return out


def cached_embedder(folder=None) -> tuple[CachedEmbedder, EmbeddingCache]:
    """The configured embedder behind the cache in ``folder`` (default: ``default_cache_dir()``);
    the caller closes the cache."""
    from captain_memo.config import embed_config
    from captain_memo.embeddings import make_embedder

    cache = EmbeddingCache(folder or default_cache_dir())
    return CachedEmbedder(make_embedder(embed_config(), backoff=False), cache), cache
