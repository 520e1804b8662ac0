#!/usr/bin/env python3
"""Embedding throughput and recall latency: the local model in-process, the same model through
`captain-memo serve-embeddings` (Ollama and OpenAI routes), and recall with a cached query.

    python scripts/bench_embeddings.py            # about a minute on 2 cores
    python scripts/bench_embeddings.py --quick    # fewer texts, smaller store

Texts are chunks of the bundled sample notes (real engineering prose, many truncated at the
model's 256 tokens) and short queries. Prints one line per measurement; nothing is asserted.
"""

from __future__ import annotations

import argparse
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from captain_memo.base.chunking import chunk_texts  # noqa: E402
from captain_memo.cli.commands.demo import SAMPLE  # noqa: E402
from captain_memo.cli.commands.importer import read_records  # noqa: E402

QUERIES = [
    "get_effective_contract_price rounding",
    "why was the invoice total off by a cent",
    "webhook retry backoff",
    "who owns the tier table",
    "decimal places in currency conversion",
    "how do we migrate the ledger",
    "flaky test in the pricing suite",
    "tenant cache key",
]


def note_texts(n: int) -> list[str]:
    chunks = [c for m in read_records(str(SAMPLE), None) for c in chunk_texts(m.title, m.body)]
    # Repeated texts get a distinct prefix so no layer could serve them from a cache.
    return [f"({i}) {chunks[i % len(chunks)]}" for i in range(n)]


def throughput(embedder, texts: list[str], batch: int) -> float:
    embedder.embed(texts[:batch])  # connection open, model warm
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - started)


def latency_ms(embedder, texts: list[str]) -> tuple[float, float]:
    times = []
    for text in texts:
        started = time.perf_counter()
        embedder.embed([text])
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "captain_memo.cli.main", "serve-embeddings", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    line = proc.stderr.readline()
    match = re.search(r"on (http://\S+)", line)
    if not match:
        proc.kill()
        raise SystemExit(f"serve-embeddings did not start: {line}")
    return proc, match.group(1)


def thread_server_latency(local, queries: list[str], nodelay: bool) -> float:
    """p50 of one-text calls to a server thread in this process, with or without TCP_NODELAY."""
    from captain_memo.embeddings.http import OllamaEmbedder
    from captain_memo.embeddings.http_server import EmbeddingServer, Handler, serve_in_thread

    class ChosenHandler(Handler):
        disable_nagle_algorithm = nodelay

    server = EmbeddingServer(local, "all-MiniLM-L6-v2-int8", "127.0.0.1", 0)
    server.RequestHandlerClass = ChosenHandler
    serve_in_thread(server)
    try:
        client = OllamaEmbedder(server.url, "all-MiniLM-L6-v2-int8")
        client.embed(["warm"])
        return latency_ms(client, queries)[0]
    finally:
        server.shutdown()
        server.server_close()


def recall_latency(embedder, texts: list[str], label: str) -> None:
    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory, Store

    with tempfile.TemporaryDirectory() as folder:
        engine = Engine(Store(Path(folder) / "memo.db"), embedder)
        try:
            started = time.perf_counter()
            engine.remember_many(
                [NewMemory(body=t, project=("billing", "search", None)[i % 3]) for i, t in enumerate(texts)]
            )
            print(f"  store of {len(texts)} memories built in {time.perf_counter() - started:.1f} s")
            cold = []
            for q in QUERIES:
                started = time.perf_counter()
                engine.recall(q, project="billing", record=False)
                cold.append((time.perf_counter() - started) * 1000)
            warm = []
            for _ in range(10):
                for q in QUERIES:
                    started = time.perf_counter()
                    engine.recall(q, project="billing", record=False)
                    warm.append((time.perf_counter() - started) * 1000)
            warm.sort()
            print(
                f"  {label}: recall p50 {statistics.median(cold):.1f} ms with the query embedded, "
                f"{statistics.median(warm):.1f} ms (p95 {warm[int(len(warm) * 0.95) - 1]:.1f}) with it cached "
                f"({engine.queries.hits} cache hits, {engine.queries.misses} misses)"
            )
        finally:
            engine.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    # Stopped with SIGTERM, still stop the server child.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    n = 64 if args.quick else 128
    texts = note_texts(n)
    queries = [f"{q} {i}" for i in range(4) for q in QUERIES]

    from captain_memo.embeddings.http import OllamaEmbedder, OpenAIEmbedder
    from captain_memo.embeddings.local import LocalEmbedder

    local = LocalEmbedder()
    local.embed(["load"])
    rows = [("local in-process", local)]
    proc, url = start_server()
    try:
        model = "all-MiniLM-L6-v2-int8"
        rows += [
            ("server, ollama /api/embed", OllamaEmbedder(url, model)),
            ("server, openai float", OpenAIEmbedder(url, model)),
            ("server, openai base64", OpenAIEmbedder(url, model, encoding="base64")),
        ]
        print(f"throughput over {n} note chunks, in batches of 32 and one at a time; latency of one short query")
        for label, embedder in rows:
            batch32 = throughput(embedder, texts, 32)
            batch1 = throughput(embedder, texts, 1)
            p50, p95 = latency_ms(embedder, queries)
            print(
                f"  {label:<28} batch 32 {batch32:6.1f} texts/s   batch 1 {batch1:6.1f} texts/s   "
                f"query p50 {p50:5.1f} ms p95 {p95:5.1f} ms"
            )
        with_nodelay = thread_server_latency(local, queries, True)
        without = thread_server_latency(local, queries, False)
        print(
            f"  server thread in this process: query p50 {with_nodelay:5.1f} ms with TCP_NODELAY, "
            f"{without:5.1f} ms without"
        )
        print("recall latency (project scope, v2 profile)")
        size = 300 if args.quick else 1000
        store_texts = [f"({i}) {QUERIES[i % len(QUERIES)]}: " + texts[i % len(texts)][:300] for i in range(size)]
        recall_latency(local, store_texts, "local")
        recall_latency(OllamaEmbedder(url, model), store_texts, "ollama provider")
    finally:
        proc.terminate()
        proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
