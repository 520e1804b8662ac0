"""Child processes for the reliability tests, and the checks they share.

Run as a script: ``python reliability_support.py write|recall|cli ...``. Each child is a real
process with its own SQLite connections on the same database file, which is what an editor, a
second editor and a CLI run are. The embedder is tests/fakes.py HashEmbedder: these tests are about
SQLite locking and transactions, not the model, and the hash embedder still writes real 384-d
vectors into the real vec0 table while keeping each child's start-up and work to a fraction of a
second (the ONNX model costs ~1 s to load per process and ~10 ms per text on these shared cores).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child: this checkout and tests/ importable, no inherited settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_MEMO_")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["CAPTAIN_MEMO_SERVICE"] = "0"  # each child does its own work: these tests are about SQLite
    env.update(extra)
    return env


def spawn(*args: str, **popen) -> subprocess.Popen:
    """Start this file as a child process with the given arguments."""
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), *args],
        env=popen.pop("env", child_env()),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


# -- checks on a database file ----------------------------------------------------------------


def agreement(db_file: Path) -> dict:
    """Integrity and cross-table agreement of a store, read with a fresh connection.

    Returns the counts and the lists of anything that disagrees (all empty when consistent).
    """
    from captain_memo.store import Store

    store = Store(db_file)
    try:
        conn = store.conn
        chunk_ids = {r[0] for r in conn.execute("SELECT id FROM chunks")}
        fts_ids = {r[0] for r in conn.execute("SELECT rowid FROM chunks_fts")}
        curated_ids = {
            r[0]
            for r in conn.execute(
                "SELECT c.id FROM chunks c JOIN memories m ON m.id = c.memory_id WHERE m.kind != 'observation'"
            )
        }
        curated_fts_ids = {r[0] for r in conn.execute("SELECT rowid FROM curated_fts")}
        with_vector = {r[0] for r in conn.execute("SELECT id FROM chunks WHERE has_vector = 1")}
        table = store.vec_table
        vec_ids = {r[0] for r in conn.execute(f"SELECT rowid FROM {table}")} if store.table_exists(table) else set()
        try:
            conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
            fts_check = "ok"
        except Exception as exc:  # reported, not raised: the caller asserts on it
            fts_check = str(exc)
        return {
            "integrity": conn.execute("PRAGMA integrity_check").fetchone()[0],
            "fts_integrity": fts_check,
            "memories": conn.execute("SELECT count(*) FROM memories").fetchone()[0],
            "distinct_hashes": conn.execute("SELECT count(DISTINCT content_hash) FROM memories").fetchone()[0],
            "chunks": len(chunk_ids),
            "fts_rows": len(fts_ids),
            "vectors": len(vec_ids),
            "fts_not_chunks": sorted(fts_ids ^ chunk_ids),
            "curated_fts_not_curated_chunks": sorted(curated_fts_ids ^ curated_ids),
            "vectors_not_flagged": sorted(vec_ids ^ with_vector),
            "memories_without_chunks": [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM memories m WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.memory_id = m.id)"
                )
            ],
            "pending": len(chunk_ids - with_vector),
        }
    finally:
        store.close()


def assert_consistent(report: dict) -> None:
    assert report["integrity"] == "ok", report
    assert report["fts_integrity"] == "ok", report
    assert report["fts_not_chunks"] == [], report
    assert report["curated_fts_not_curated_chunks"] == [], report
    assert report["vectors_not_flagged"] == [], report
    assert report["memories_without_chunks"] == [], report


# -- the children ---------------------------------------------------------------------------


def _engine(db: str):
    from fakes import HashEmbedder

    from captain_memo.engine.core import Engine
    from captain_memo.store import Store

    return Engine(Store(db), HashEmbedder())


def write(db: str, writer: str, count: str, batch: str) -> int:
    """Save ``count`` memories, one at a time (an editor) or in batches (an import or index run)."""
    from captain_memo.store import NewMemory

    engine = _engine(db)
    size = int(batch)
    memories = [
        NewMemory(
            body=f"writer {writer} note {i}: the deploy of service {i % 17} uses port {8000 + i}",
            title=f"w{writer}-{i}",
            project=None if i % 3 else f"project-{writer}",
        )
        for i in range(int(count))
    ]
    saved = 0
    for start in range(0, len(memories), size):
        part = memories[start : start + size]
        if size == 1:
            engine.remember(part[0])
            saved += 1
        else:
            saved += sum(1 for i in engine.remember_many(part) if i is not None)
    engine.close()
    print(f"saved {saved}")
    return 0


def recall(db: str, stop_file: str) -> int:
    """Recall in a loop until ``stop_file`` exists; every recall must answer from both legs."""
    engine = _engine(db)
    answered = hits = 0
    queries = ["deploy of service 3", "port 8042", "writer 2 note", "what uses port 8100"]
    while not os.path.exists(stop_file):
        result = engine.recall(queries[answered % len(queries)], project="project-1")
        if result.failures or set(result.legs) != {"vector", "keyword"}:
            print(f"degraded answer: {result.failures}", file=sys.stderr)
            return 3
        answered += 1
        hits += len(result.hits)
    engine.close()
    print(f"answered {answered} hits {hits}")
    return 0


def cli(*argv: str) -> int:
    """The real CLI with the hash embedder in place of the configured one (see the module doc)."""
    from fakes import HashEmbedder

    import captain_memo.engine.core

    captain_memo.engine.core.make_embedder = lambda cfg, **_: HashEmbedder()
    from captain_memo.cli.main import main

    print("started", flush=True)
    return main(list(argv))


def cli_without_vec(*argv: str) -> int:
    """The CLI as it runs where sqlite-vec cannot be loaded: the real extension loader is pointed at
    a file that does not exist, so SQLite's own load_extension fails (there is no other way to
    have the installed extension fail on this machine)."""
    import sqlite_vec

    sqlite_vec.loadable_path = lambda: str(HERE / "no-such-sqlite-vec-extension")
    return cli(*argv)


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    sys.exit({"write": write, "recall": recall, "cli": cli, "cli-without-vec": cli_without_vec}[command](*rest))
