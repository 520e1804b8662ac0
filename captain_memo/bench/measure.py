"""Measuring one synthetic store: every figure `captain-memo bench` reports for one size.

Run in a fresh process per store (``python -m captain_memo.bench.measure DB``), so resident
memory and open-plus-first-query time are those of a process that only opened that store.
Latencies are one query at a time, p50 and p95 over every query of the store's query set, after
a few unmeasured warm-up queries. Exact search (sqlite-vec's brute-force KNN) is the reference
for recall@10.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from captain_memo.bench.synth import QuerySet, sidecar
from captain_memo.embeddings.local import DIM, MODEL_ID
from captain_memo.errors import EmbeddingError

WARMUP = 3
ADDS = 300  # memories written one transaction each to measure the write path


@dataclass(frozen=True)
class Timing:
    p50: float  # milliseconds
    p95: float
    n: int

    @classmethod
    def of(cls, seconds: list[float]) -> Timing:
        ms = np.asarray(seconds) * 1000
        return cls(round(float(np.percentile(ms, 50)), 2), round(float(np.percentile(ms, 95)), 2), len(ms))


class KnownQueries:
    """An embedder that answers the bench's query texts with their stored vectors: recall with
    the query embedding already cached, and no model in the process."""

    model_id = MODEL_ID
    dim = DIM

    def __init__(self, queries: QuerySet):
        self.table = dict(zip(queries.texts, queries.vectors))

    def embed(self, texts):
        try:
            return np.stack([self.table[t] for t in texts])
        except KeyError as exc:
            raise EmbeddingError(f"not a bench query: {exc}") from None


def rss_mb() -> float:
    """Resident memory of this process now, MB (Linux /proc; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def timed(fn, items, warmup: int = WARMUP):
    """(results, seconds per item) of fn over items, after ``warmup`` unmeasured calls."""
    for item in items[:warmup]:
        fn(item)
    results, seconds = [], []
    for item in items:
        started = time.perf_counter()
        results.append(fn(item))
        seconds.append(time.perf_counter() - started)
    return results, seconds


def recall_at_10(found: list[dict], truth: list[dict]) -> float:
    scores = []
    for got, want in zip(found, truth):
        want10 = list(want)[:10]
        if want10:
            scores.append(len(set(list(got)[:10]) & set(want10)) / len(want10))
    return round(float(np.mean(scores)), 4) if scores else 1.0


def measure(db: Path, embed: bool = True) -> dict:
    from captain_memo.engine.core import Engine
    from captain_memo.ranking.query import STOPWORDS, fts_match
    from captain_memo.store import Store
    from captain_memo.store.memindex import MemIndex
    from captain_memo.store.search import Scope, SqliteVecIndex, keyword_leg, selective_match

    spec = json.loads(sidecar(db)[0].read_text())["spec"]
    queries = QuerySet.load(sidecar(db)[1])
    known = KnownQueries(queries)
    out: dict = {"chunks": spec["chunks"], "db_mb": round(_db_bytes(db) / 2**20, 1), "queries": len(queries.texts)}
    project_scopes = [Scope(p) for p in queries.projects]
    everything = Scope(all_projects=True)
    items = list(range(len(queries.texts)))
    k = 25  # the engine's candidates per leg

    # 1. Open plus first recall, the one-shot CLI's path (sqlite-vec index).
    started = time.perf_counter()
    store = Store(db)
    engine = Engine(store, known)
    engine.recall(queries.texts[0], project=queries.projects[0], record=False)
    out["open_first_query_ms"] = round((time.perf_counter() - started) * 1000, 1)
    out["memories"] = store.memory_count()

    # 2. Exact search with sqlite-vec: the reference for recall, and its own latency.
    exact = SqliteVecIndex(store)
    truth_project, t = timed(lambda i: exact.knn(queries.vectors[i], project_scopes[i], k), items)
    out["sqlite_vec_project"] = asdict(Timing.of(t))
    truth_all, t = timed(lambda i: exact.knn(queries.vectors[i], everything, k), items)
    out["sqlite_vec_all"] = asdict(Timing.of(t))
    out["rss_sqlite_mb"] = round(rss_mb(), 1)

    # 3. The in-memory index: build (open plus first query), memory, latency, recall.
    started = time.perf_counter()
    index = MemIndex(store)
    index.knn(queries.vectors[0], project_scopes[0], k)
    out["memindex_open_first_query_ms"] = round((time.perf_counter() - started) * 1000, 1)
    out["memindex_mb"] = round(index.nbytes / 2**20, 1)
    found, t = timed(lambda i: index.knn(queries.vectors[i], project_scopes[i], k), items)
    out["memindex_project"] = asdict(Timing.of(t))
    out["memindex_project_recall10"] = recall_at_10(found, truth_project)
    found, t = timed(lambda i: index.knn(queries.vectors[i], everything, k), items)
    out["memindex_all"] = asdict(Timing.of(t))
    out["memindex_all_recall10"] = recall_at_10(found, truth_all)
    out["rss_memindex_mb"] = round(rss_mb(), 1)

    # 4. The keyword leg alone.
    _, t = timed(
        lambda i: keyword_leg(
            store, selective_match(store, fts_match(queries.texts[i]), STOPWORDS), project_scopes[i], k
        ),
        items,
    )
    out["keyword"] = asdict(Timing.of(t))

    # 5. Full recall (both legs, fusion, boosts, Tide, recorded), query embedding cached.
    for name, vector_index in (("recall_cached_memindex", index), ("recall_cached_sqlite", None)):
        eng = Engine(store, known, vector_index=vector_index)
        _, t = timed(lambda i, eng=eng: eng.recall(queries.texts[i], project=queries.projects[i]), items)
        out[name] = asdict(Timing.of(t))

    # 6. Full recall with the query embedded by the local model each time (no cache hits).
    if embed:
        from captain_memo.embeddings.local import LocalEmbedder

        model = LocalEmbedder()
        model.embed(["warm the model up"])
        eng = Engine(store, model, vector_index=index)
        _, t = timed(lambda i: eng.recall(queries.texts[i], project=queries.projects[i]), items, warmup=0)
        out["recall_embedded_memindex"] = asdict(Timing.of(t))
        out["rss_with_model_mb"] = round(rss_mb(), 1)

    # 7. The write path: memories added one transaction each, then the index catching up.
    rng = np.random.default_rng(99)
    vectors = rng.standard_normal((ADDS, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    from captain_memo.records import NewMemory

    started = time.perf_counter()
    added = []
    for i in range(ADDS):  # one after another across projects, as a day's notes arrive
        text = f"bench write {i}: {queries.texts[i % len(queries.texts)]}"
        added.append(
            store.add(
                NewMemory(body=text, project=queries.projects[i % len(queries.texts)]), [text], vectors[i : i + 1]
            )
        )
    out["add_rows_per_s"] = round(ADDS / (time.perf_counter() - started))
    started = time.perf_counter()
    index.knn(queries.vectors[0], everything, k)
    out["memindex_catch_up_ms"] = round((time.perf_counter() - started) * 1000, 1)
    out["memindex_builds"] = index.builds
    for memory_id in added:  # a kept store stays as it was built
        store.delete(memory_id)
    store.close()
    return out


def _db_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m captain_memo.bench.measure")
    parser.add_argument("db", type=Path)
    parser.add_argument("--no-embed", action="store_true", help="skip recall with the local model")
    args = parser.parse_args(argv)
    json.dump(measure(args.db, embed=not args.no_embed), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
