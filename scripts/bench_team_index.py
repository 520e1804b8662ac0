"""The team store's vector index: HNSW against IVFFlat on real embeddings, against exact search.

    python scripts/bench_team_index.py --cache DIR --url postgresql://... [--queries 200]

Reads every vector of the default model in an eval embedding cache (``captain-memo eval --cache``),
loads them into a throwaway team database on ``--url``'s server (its role may create databases),
builds each index in turn and times ``PgVectorIndex.knn`` (k = 10, one project: personal notes)
for held-out vectors of the same cache, with recall@10 against the exact answer (the same query
with index scans off). Prints build time, p50/p95 latency and recall@10 per index, and the load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

from captain_memo.records import NewMemory
from captain_memo.store.embedding_cache import EmbeddingCache
from captain_memo.store.postgres import TeamStore
from captain_memo.store.postgres.scratch import scratch_database
from captain_memo.store.postgres.vectors import PgVectorIndex
from captain_memo.store.search import Scope

MODEL = "local:all-MiniLM-L6-v2-int8"
INDEXES = {
    "hnsw (m 16, ef_construction 64; ef_search 100)": "CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_l2_ops)",
    "ivfflat (lists sqrt(n); probes 10)": "CREATE INDEX chunks_embedding ON chunks USING ivfflat (embedding vector_l2_ops) WITH (lists = {lists})",
}


def cached_vectors(folder: str) -> np.ndarray:
    cache = EmbeddingCache(Path(folder))
    rows = cache.conn.execute("SELECT vector FROM vectors WHERE model = ?", (MODEL,)).fetchall()
    return np.stack([np.frombuffer(blob, dtype=np.float32) for (blob,) in rows])


def timed_knn(index: PgVectorIndex, queries: np.ndarray) -> tuple[list[float], list[list[int]]]:
    times, answers = [], []
    for query in queries:
        started = time.perf_counter()
        answers.append(list(index.knn(query, Scope(None), 10)))
        times.append((time.perf_counter() - started) * 1000)
    return times, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    vectors = cached_vectors(args.cache)
    queries, stored = vectors[: args.queries], vectors[args.queries :]
    with scratch_database(args.url) as dsn:
        store = TeamStore(dsn)
        store.bind_model(MODEL, stored.shape[1])
        store.bulk_load([(NewMemory(body=f"v{i}"), [f"v{i}"], stored[i : i + 1]) for i in range(len(stored))], True)
        index = PgVectorIndex(store)
        store.conn.execute("SET enable_indexscan = off")
        _, exact = timed_knn(index, queries)
        store.conn.execute("SET enable_indexscan = on")
        store.conn.execute("SET ivfflat.probes = 10")
        print(f"{len(stored):,} vectors of {MODEL}, {len(queries)} held-out queries, k = 10")
        print("| index | build s | p50 ms | p95 ms | recall@10 |\n|---|---:|---:|---:|---:|")
        for name, sql in INDEXES.items():
            store.conn.execute("DROP INDEX IF EXISTS chunks_embedding")
            started = time.perf_counter()
            store.conn.execute(sql.format(lists=int(len(stored) ** 0.5)))
            build = time.perf_counter() - started
            store.conn.execute("ANALYZE chunks")
            times, found = timed_knn(index, queries)
            recall = statistics.mean(len(set(f) & set(e)) / 10 for f, e in zip(found, exact))
            p95 = sorted(times)[int(0.95 * len(times))]
            print(f"| {name} | {build:.1f} | {statistics.median(times):.1f} | {p95:.1f} | {recall:.3f} |")
        store.close()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
