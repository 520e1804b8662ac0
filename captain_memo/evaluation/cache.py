"""A disk cache of embeddings keyed by model id and text hash, so a corpus is embedded once.

One small SQLite file per cache folder (default ``$XDG_CACHE_HOME/captain-memo/embeddings``).
Vectors of two models never mix: the model id is part of the key.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Sequence

import numpy as np

from captain_memo.progress import Progress

SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, hash TEXT NOT NULL, dim INTEGER NOT NULL," \
         " vector BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID"
# Texts embedded per model call while filling the cache; also how often progress is committed.
FILL_BATCH = 64


def default_cache_dir(env: dict | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "captain-memo" / "embeddings"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """model id + sha256(text) -> float32 vector, in ``<folder>/vectors.sqlite``."""

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.folder / "vectors.sqlite"), check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA busy_timeout=10000")
        self.conn.execute(SCHEMA)
        self.conn.commit()

    def close(self) -> None:
        self.conn.close()

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), 500):
            part = unique[start:start + 500]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({marks})",
                                     (model, *part))
            for digest, blob in rows:
                found[digest] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO vectors (model, hash, dim, vector) VALUES (?, ?, ?, ?)",
                [(model, digest, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for digest, v in items])

    def count(self, model: str) -> int:
        return self.conn.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0]


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
        hashes = [text_hash(t) for t in texts]
        found = self.cache.get_many(self.model_id, hashes)
        missing = {d: t for d, t in zip(hashes, texts) if d not in found}
        if missing:
            found.update(self._fill(missing))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[d] for d in hashes]).astype(np.float32, copy=False)

    def _fill(self, missing: dict[str, str]) -> dict[str, np.ndarray]:
        items = list(missing.items())
        bar = Progress(len(items), f"embedding ({self.model_id})") if self.progress and len(items) > 1 else None
        out: dict[str, np.ndarray] = {}
        # Shortest first: batches of similar length waste less padding.
        items.sort(key=lambda item: len(item[1]))
        for start in range(0, len(items), FILL_BATCH):
            part = items[start:start + FILL_BATCH]
            vectors = self.inner.embed([text for _, text in part])
            pairs = [(digest, vectors[i]) for i, (digest, _) in enumerate(part)]
            self.cache.put_many(self.model_id, pairs)
            out.update(pairs)
            self.embedded += len(part)
            if bar:
                bar.advance(len(part))
        if bar:
            bar.close()
        return out
