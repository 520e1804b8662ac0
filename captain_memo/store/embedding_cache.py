"""The embedding cache's file: model id + sha256(text) -> vector, in one small SQLite file per folder
(default ``$XDG_CACHE_HOME/captain-memo/embeddings``). Vectors of two models never mix: the model id
is part of the key. A cache of the evaluation's corpora, apart from any memory store.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, hash TEXT NOT NULL, dim INTEGER NOT NULL,"
    " vector BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID"
)


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
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
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({marks})", (model, *part)
            )
            for digest, blob in rows:
                found[digest] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO vectors (model, hash, dim, vector) VALUES (?, ?, ?, ?)",
                [(model, digest, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for digest, v in items],
            )

    def count(self, model: str) -> int:
        return self.conn.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0]
