"""Indexing speed: a folder of generated Markdown notes, with the default embedder.

    python scripts/bench_index.py [--notes 2000] [--seed 7]

Prints files/s and chunks/s for a cold run (every chunk embedded), a rerun with nothing changed
(target: under 2 s for 2,000 notes), a rerun after editing one note, and the same no-change rerun
through the `captain-memo index` command in a fresh process (start-up and imports included).
Everything lives in a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = (
    "cache",
    "index",
    "query",
    "latency",
    "deploy",
    "rollback",
    "schema",
    "migration",
    "worker",
    "queue",
    "timeout",
    "retry",
    "token",
    "session",
    "branch",
    "commit",
    "review",
    "config",
    "service",
    "client",
    "server",
    "vector",
    "keyword",
    "ranking",
    "budget",
    "memory",
    "thread",
    "lock",
    "backup",
    "restore",
    "metrics",
    "alert",
    "error",
    "payload",
    "request",
    "response",
    "handler",
    "module",
    "release",
    "feature",
)


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
    return " ".join(words).capitalize() + "."


def note(rng: random.Random, n: int) -> str:
    parts = [
        f"---\ntitle: Note {n} on {rng.choice(WORDS)} and {rng.choice(WORDS)}\n"
        f"date: 2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}\n"
        f"tags: [{rng.choice(WORDS)}, {rng.choice(WORDS)}]\n---\n",
        f"# Note {n}\n\n{sentence(rng)}\n",
    ]
    for s in range(rng.randint(1, 3)):
        paragraphs = [" ".join(sentence(rng) for _ in range(rng.randint(2, 4))) for _ in range(rng.randint(1, 2))]
        parts.append(f"## {rng.choice(WORDS).title()} {s}\n\n" + "\n\n".join(paragraphs) + "\n")
        if rng.random() < 0.2:
            parts.append(f"```python\n## not a heading\n{rng.choice(WORDS)}_{n} = {s}\n```\n")
    return "\n".join(parts)


def generate(folder: Path, count: int, seed: int) -> None:
    rng = random.Random(seed)
    for n in range(count):
        path = folder / f"area-{n % 20:02d}" / f"note-{n:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(rng, n), encoding="utf-8")


def timed(label: str, run) -> object:
    started = time.perf_counter()
    report = run()
    seconds = time.perf_counter() - started
    files = getattr(report, "files", 0)
    chunks = getattr(report, "chunks_embedded", 0)
    print(
        f"{label:<26} {seconds:8.2f} s  {files / seconds:9.0f} files/s  {chunks / seconds:8.0f} chunks/s  "
        f"({report.counts()}, {chunks} chunks embedded)"
    )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    from captain_memo.config import embed_config
    from captain_memo.embeddings import make_embedder
    from captain_memo.engine.core import Engine
    from captain_memo.sources.indexer import index_paths
    from captain_memo.store import Store

    with tempfile.TemporaryDirectory(prefix="captain-memo-bench-") as tmp:
        folder, db = Path(tmp) / "notes", Path(tmp) / "memo.db"
        generate(folder, args.notes, args.seed)
        embedder = make_embedder(embed_config())
        started = time.perf_counter()
        embedder.embed(["warm up"])
        print(
            f"{args.notes} notes, embedder {embedder.model_id}, model load {time.perf_counter() - started:.2f} s, "
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
        )
        engine = Engine(Store(db), embedder)
        try:
            cold = timed("cold", lambda: index_paths(engine, [folder]))
            timed("nothing changed", lambda: index_paths(engine, [folder]))
            edited = next(folder.rglob("note-00042.md"))
            edited.write_text(edited.read_text(encoding="utf-8") + "\n## Added\n\nOne more paragraph.\n")
            timed("one note edited", lambda: index_paths(engine, [folder]))
            print(
                f"store: {engine.store.counts()['memories']} memories, {engine.store.counts()['chunks']} chunks "
                f"({cold.chunks_embedded / max(cold.files, 1):.1f} chunks per note)"
            )
            # The embedder alone on the same texts, to tell its speed from the indexer's own work.
            sample = [t for (t,) in engine.store.conn.execute("SELECT text FROM chunks ORDER BY id LIMIT 512")]
            started = time.perf_counter()
            embedder.embed(sorted(sample, key=len))
            seconds = time.perf_counter() - started
            print(
                f"{'embedder alone':<26} {seconds:8.2f} s  {'':>15}  {len(sample) / seconds:8.0f} chunks/s  "
                f"({len(sample)} of the stored chunks; load average {os.getloadavg()[0]:.1f})"
            )
        finally:
            engine.close()
        command = [sys.executable, "-m", "captain_memo.cli.main", "--db", str(db), "index", str(folder)]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        print(
            f"{'nothing changed, CLI':<26} {seconds:8.2f} s  {args.notes / seconds:9.0f} files/s  "
            f"(a new process: {done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
