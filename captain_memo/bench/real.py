"""Recall@10 of the in-memory index on real embeddings, beside a synthetic store of the same size.

The synthetic stores stand in for real ones at 150,000 and 1,000,000 chunks; this checks the
stand-in. Every document of the given BEIR-style sets goes into one store through the normal
write path, embedded by the local model (through the evaluation's disk cache, so a set already
evaluated costs nothing to embed), and every query searches all of it. Recall is measured at
fixed candidate counts as well as with the index's own rule: at the same size, a stand-in that
needs more candidates than real data for the same recall makes the large-store figures err low.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CURVE = (160, 320, 640)  # candidates rescored; 160 is the least the index takes for k = 10
K = 10
BATCH = 256


@dataclass(frozen=True)
class RecallRow:
    label: str
    chunks: int
    queries: int
    by_candidates: dict[int, float]  # candidates rescored -> recall@10
    default: float  # with the index's own candidate rule
    default_candidates: int


def _recall(store, vectors: np.ndarray, truth: list[dict], candidates: int | None) -> float:
    from captain_memo.bench.measure import recall_at_10
    from captain_memo.store.memindex import MemIndex
    from captain_memo.store.search import Scope

    index = MemIndex(store) if candidates is None else MemIndex(store, candidate_share=0.0, min_candidates=candidates)
    return recall_at_10([index.knn(v, Scope(all_projects=True), K) for v in vectors], truth)


def _row(label: str, store, vectors: np.ndarray) -> RecallRow:
    import math

    from captain_memo.store.memindex import CANDIDATE_SHARE, MIN_CANDIDATES
    from captain_memo.store.search import Scope, SqliteVecIndex

    exact = SqliteVecIndex(store)
    truth = [exact.knn(v, Scope(all_projects=True), K) for v in vectors]
    chunks = store.chunk_count()
    curve = {c: _recall(store, vectors, truth, c) for c in CURVE if c < chunks}
    rule = max(MIN_CANDIDATES, math.ceil(CANDIDATE_SHARE * chunks))
    return RecallRow(label, chunks, len(vectors), curve, _recall(store, vectors, truth, None), rule)


def check(folders: list[str], cache_dir: Path | None = None, progress: bool = True) -> list[RecallRow]:
    from captain_memo.bench.synth import QuerySet, Spec, build_store, sidecar
    from captain_memo.embeddings.local import LocalEmbedder
    from captain_memo.engine.core import Engine
    from captain_memo.evaluation.cache import CachedEmbedder, EmbeddingCache, default_cache_dir
    from captain_memo.evaluation.data import load
    from captain_memo.records import NewMemory
    from captain_memo.store import Store

    embedder = CachedEmbedder(LocalEmbedder(), EmbeddingCache(cache_dir or default_cache_dir()), progress=progress)
    names, query_texts = [], []
    with tempfile.TemporaryDirectory(prefix="captain-memo-bench-real-") as tmp:
        engine = Engine(Store(Path(tmp) / "real.db"), embedder)
        for folder in folders:
            dataset = load(folder)
            names.append(dataset.name)
            docs = [d for d in dataset.docs if (d.text or d.title).strip()]
            for start in range(0, len(docs), BATCH):  # as the evaluation stores them, so the cache hits
                engine.remember_many(
                    [
                        NewMemory(body=d.text if d.text.strip() else d.title, title=d.title)
                        for d in docs[start : start + BATCH]
                    ],
                    skip_duplicates=False,
                )
            query_texts += [q.text for q in dataset.queries]
        real = _row("real: " + ", ".join(names) + " (all-MiniLM-L6-v2)", engine.store, embedder.embed(query_texts))
        chunks = real.chunks
        engine.close()
        synthetic_db = Path(tmp) / "synthetic.db"
        build_store(synthetic_db, Spec(chunks, queries=min(len(query_texts), 300)))
        store = Store(synthetic_db)
        synthetic = _row("synthetic, same size", store, QuerySet.load(sidecar(synthetic_db)[1]).vectors)
        store.close()
    return [real, synthetic]


def markdown(rows: list[RecallRow]) -> str:
    head = "| vectors | chunks | queries | " + " | ".join(f"{c} candidates" for c in CURVE) + " | the index's rule |"
    lines = [head, "|---|---|---|" + "---|" * (len(CURVE) + 1)]
    for row in rows:
        cells = [f"{row.by_candidates[c]:.3f}" if c in row.by_candidates else "-" for c in CURVE]
        lines.append(
            f"| {row.label} | {row.chunks:,} | {row.queries:,} | "
            + " | ".join(cells)
            + f" | {row.default:.3f} ({row.default_candidates:,}) |"
        )
    return "\n".join(lines) + "\n"
