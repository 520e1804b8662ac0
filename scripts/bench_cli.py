"""Command-line latency: `recall` and `remember` as whole processes, with and without the warm service.

    python scripts/bench_cli.py [--memories 10000] [--runs 20]
    python scripts/bench_cli.py --installs /tmp/wheel-venv/bin .venv/bin [--runs 30]

Builds a synthetic store (captain_memo/bench/synth.py: the default model's id, vectors shaped like
its embeddings) in a temporary folder, then times whole `captain-memo` processes from spawn to exit:
`python -c pass` (the floor: interpreter start-up), recall and remember cold (CAPTAIN_MEMO_SERVICE=0:
imports, model load, database open in the process) and warm (answered by the service, started
once before timing). Runs are interleaved (one of each kind in turn), so a change in the machine's
load touches every kind alike. Every recall asks a different query (no cache helps), over every
project (`--all-projects`: all memories in scope). Prints wall p50/p95 per kind, the CPU time the
command's own process used (less sensitive to load than wall time), and the load average.

``--installs``: the thin path of each installation whose bin folder is named (a wheel's in a fresh
venv, an editable checkout's): a store of one memory and a HOME and runtime folder of its own each,
its service started by a first recall, then `python -c pass` and a warm `captain-memo recall x`
(the same query each time: its vector comes from the service's query cache) interleaved.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHUNKS_PER_MEMORY = 1.3  # the synthetic store's average (bench/synth.py)


def command() -> list[str]:
    """The installed `captain-memo` script beside this interpreter, as a user runs it."""
    script = Path(sys.executable).with_name("captain-memo")
    return [str(script)] if script.exists() else [sys.executable, "-m", "captain_memo.cli.main"]


def timed(argv: list[str], env: dict, folder: Path) -> tuple[float, float]:
    """Wall seconds of the whole process, and the CPU seconds it used itself (a service it asked
    is not its child, so the service's work is in the wall time only)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return seconds, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def build(folder: Path, memories: int) -> tuple[Path, list[str]]:
    from captain_memo.bench.synth import QuerySet, Spec, build_store, sidecar

    db = folder / "memo.db"
    report = build_store(db, Spec(chunks=round(memories * CHUNKS_PER_MEMORY)))
    print(f"store: {report.memories:,} memories, {report.chunks:,} chunks ({report.bytes / 1e6:.0f} MB)")
    return db, QuerySet.load(sidecar(db)[1]).texts


def report(runs: dict[str, list[tuple[float, float]]], count: int) -> None:
    print(f"{'':<24}{'p50 ms':>8}{'p95 ms':>8}{'CPU p50':>9}   ({count} whole-process runs each, interleaved)")
    for name, values in runs.items():
        wall = [w for w, _ in values]
        cpu = statistics.median(c for _, c in values)
        print(
            f"{name:<24}{statistics.median(wall) * 1000:>8.0f}{percentile(wall, 0.95) * 1000:>8.0f}{cpu * 1000:>9.0f}"
        )


def thin(installs: list[str], count: int) -> int:
    """A warm recall against an empty interpreter's start, per installation (``--installs``)."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CAPTAIN_MEMO_") and k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
    }
    folder = Path(tempfile.mkdtemp(prefix="captain-memo-bench-thin-"))
    kinds, services = {}, []
    try:
        for n, bin_dir in enumerate(Path(b).absolute() for b in installs):
            home = folder / str(n)
            (home / "run").mkdir(parents=True, mode=0o700)
            env = {**base, "HOME": str(home), "XDG_RUNTIME_DIR": str(home / "run")}
            cli = [str(bin_dir / "captain-memo")]
            timed(cli + ["remember", "The zanzibar cache key includes the tenant id."], env, home)
            for _ in range(3):  # the service starts, loads the model, caches the query's vector
                timed(cli + ["recall", "x"], env, home)
            services.append((cli, env, home))
            kinds[f"python -c pass, {n}"] = lambda b=bin_dir, e=env, h=home: timed(
                [str(b / "python"), "-c", "pass"], e, h
            )
            kinds[f"recall, warm, {n}"] = lambda c=cli, e=env, h=home: timed(c + ["recall", "x"], e, h)
            print(f"{n}: {bin_dir}")
        print(f"before: {load()}")
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in kinds}
        for _ in range(count):
            for name, run in kinds.items():
                runs[name].append(run())
        print(f"after:  {load()}")
        report(runs, count)
    finally:
        for cli, env, home in services:
            subprocess.run(cli + ["service", "stop"], env=env, cwd=home, stdout=subprocess.DEVNULL)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--installs", nargs="+", metavar="BIN", help="compare these installations' thin path instead")
    args = parser.parse_args(argv)
    if args.installs:
        return thin(args.installs, args.runs)
    folder = Path(tempfile.mkdtemp(prefix="captain-memo-bench-cli-"))
    cli = command()
    try:
        db, queries = build(folder, args.memories)
        # Byte-code caches on, as in an installed package (pip compiles on install); a process
        # that compiles every module from source pays ~30 ms more each run.
        base = {
            k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_MEMO_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        warm = {**base, "CAPTAIN_MEMO_DB": str(db), "CAPTAIN_MEMO_RUNTIME_DIR": str(folder / "run")}
        cold = {**warm, "CAPTAIN_MEMO_SERVICE": "0"}
        for i in range(3):  # start the service, load the model, let the in-memory index build
            timed(cli + ["recall", "--all-projects", f"warm up {i}"], warm, folder)
        timed(cli + ["remember", "warm up"], cold, folder)  # every module's byte code is written
        time.sleep(2)
        kinds = {
            "python -c pass": lambda i: timed([sys.executable, "-c", "pass"], base, folder),
            "recall cold": lambda i: timed(
                cli + ["recall", "--all-projects", queries[i % len(queries)] + " c"], cold, folder
            ),
            "recall warm": lambda i: timed(
                cli + ["recall", "--all-projects", queries[i % len(queries)] + " w"], warm, folder
            ),
            "remember cold": lambda i: timed(cli + ["remember", f"bench note {i}: cold path timing"], cold, folder),
            "remember warm": lambda i: timed(cli + ["remember", f"bench note {i}: warm path timing"], warm, folder),
        }
        print(f"before: {load()}")
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in kinds}
        for i in range(args.runs):
            for name, run in kinds.items():
                runs[name].append(run(i))
        print(f"after:  {load()}")
        report(runs, args.runs)
        subprocess.run(cli + ["service", "stop"], env=warm, cwd=folder, stdout=subprocess.DEVNULL)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
