#!/usr/bin/env python3
"""Indexing through the serving engine against the same index in its own process, and what the
recalls served meanwhile meet.

    python scripts/bench_engine_index.py [--runs 2] [--memories 10000] [--recalls 40] [--git N]

A throwaway repository holds Flask's documentation (``../shared/histories/flask-docs``, 76 files,
602 chunks; with ``--git N`` also the newest N commits of the history rebuilt from
``../shared/histories/flask.jsonl``). Each run indexes it (`captain-memo index docs`, then
`index --git` with ``--git``) into three copies of one store of ``--memories`` synthetic notes
(scripts/bench_nvim.py's, random unit vectors), one after the other, the first two in turns:

- **own process**: `CAPTAIN_MEMO_SERVICE=0`, the command embeds with a model of its own;
- **through the engine**: the warm service serves the store (started and warmed by five recalls);
  the command asks it for its vectors (hosting/embedder.py);
- **through the engine, recalls beside** (a third copy, after the other two): as above, and
  ``--recalls`` recalls of distinct identifiers are timed over its socket (the client's round
  trip, 50 ms apart: a recall in flight about half the time) before the index (idle), then for as
  long as the index runs.

Printed: each index's wall time and the CPU time of its own process (small when the engine
embedded), the ratio engine / own process, recall p50 / p95 idle and during the index, and the
load average before and after. The engine's watcher is off (`CAPTAIN_MEMO_WATCH=0`): only the
index's own texts are embedded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HISTORIES = REPO.parent / "shared" / "histories"
sys.path.insert(0, str(REPO / "scripts"))

from bench_nvim import fill, identifier, percentile  # noqa: E402


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def make_repository(root: Path, histories: Path, commits: int) -> Path:
    """Flask's docs in ``root/flask/docs``, over its rebuilt history when ``commits``."""
    repo = root / "flask"
    if commits:
        from captain_memo.bench.histories import rebuild

        rebuild(histories / "flask.jsonl", repo)
    else:
        repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    shutil.copytree(histories / "flask-docs", repo / "docs", dirs_exist_ok=True)  # over the history's own docs/
    return repo


def index(repo: Path, db: Path, args, own: bool) -> tuple[float, float]:
    """Wall and CPU seconds of `captain-memo index docs` (and `index --git`) in ``repo``."""
    env = {**os.environ, "CAPTAIN_MEMO_DB": str(db)}
    if own:
        env["CAPTAIN_MEMO_SERVICE"] = "0"
    commands = [["index", "-q", "docs"]]
    if args.git:
        commands.append(["index", "-q", "--git", "--max-commits", str(args.git)])
    took = cpu = 0.0
    for command in commands:
        with tempfile.TemporaryFile("w+") as errors:
            started = time.perf_counter()
            process = subprocess.Popen(
                [sys.executable, "-m", "captain_memo.cli.main", *command],
                cwd=repo,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )
            _, status, usage = os.wait4(process.pid, 0)  # this process's own CPU, not the service's
            process.returncode = status = os.waitstatus_to_exitcode(status)
            took += time.perf_counter() - started
            cpu += usage.ru_utime + usage.ru_stime
            errors.seek(0)
            said = errors.read().strip()
        if status != 0 or said:
            print(f"  index {' '.join(command)}: exit status {status} {said}")
    return took, cpu


FAILED: list[str] = []  # recalls the engine answered with an error


def recall_ms(db: Path, query: str) -> float | None:
    """One recall's round trip; None (noted in FAILED) when the engine answered with an error."""
    from captain_memo.errors import CaptainMemoError
    from captain_memo.hosting.client import call
    from captain_memo.requests import operations

    started = time.perf_counter()
    try:
        answer = call("recall", operations.RecallRequest(query, str(REPO), all_projects=True).to_json(), db)
    except CaptainMemoError as exc:
        FAILED.append(str(exc))
        return None
    if answer is None:
        sys.exit("the service did not answer (see its log in the runtime folder)")
    return (time.perf_counter() - started) * 1000


def recalls(db: Path, queries, count: int | None = None, busy: threading.Thread | None = None) -> list[float]:
    """Recall round trips, 50 ms apart: ``count`` of them, or as many as ``busy`` runs."""
    out: list[float] = []
    while (busy is not None and busy.is_alive()) or (count is not None and len(out) < count):
        took = recall_ms(db, next(queries))
        if took is not None:
            out.append(took)
        time.sleep(0.05)
    return out


def reopened(run: Path) -> int:
    """How often the engine's log says it took the store for one copied over (and reopened it)."""
    return sum(log.read_text().count("rewritten in place") for log in run.glob("*.log"))


def through_engine(repo: Path, db: Path, args, queries, timed: bool) -> tuple[float, list[float], list[float]]:
    """The index through the served engine: its wall time, and with ``timed`` the recalls idle
    before it and during it."""
    from captain_memo.hosting.client import control

    idle: list[float] = []
    during: list[float] = []
    try:
        for _ in range(5):
            if recall_ms(db, next(queries)) is None:
                sys.exit(f"the engine could not recall: {FAILED[0]}")
        time.sleep(3)  # the in-memory index builds in the background
        if timed:
            idle = recalls(db, queries, count=args.recalls)
        result: dict = {}
        indexing = threading.Thread(target=lambda: result.update(took=index(repo, db, args, own=False)))
        indexing.start()
        if timed:
            during = recalls(db, queries, busy=indexing)
        indexing.join()
        embedded = ((control("status", db) or {}).get("embedded") or {}).get("texts", 0)
    finally:
        control("stop", db)
    wall, cpu = result["took"]
    name = "engine, recalls beside" if timed else "through the engine"
    print(f"  {name:<22} {wall:6.1f} s (its process {cpu:5.1f} s CPU; the engine embedded {embedded:,} texts)")
    if FAILED:
        print(f"  {len(FAILED)} recalls failed, the first: {FAILED[0]}")
        FAILED.clear()
    if copies := reopened(Path(os.environ["CAPTAIN_MEMO_RUNTIME_DIR"])):
        print(f"  the engine's log: the store taken for one copied over {copies} times so far (reopened)")
    return wall, idle, during


def line(name: str, values: list[float], idle_p95: float | None = None) -> str:
    p95 = percentile(values, 0.95)
    ratio = f"  = {p95 / idle_p95:.2f}x idle p95" if idle_p95 else ""
    return f"  {name:<22} n {len(values):3d}  p50 {statistics.median(values):6.1f} ms  p95 {p95:6.1f} ms{ratio}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--recalls", type=int, default=40, help="idle recalls timed before each index")
    parser.add_argument("--git", type=int, default=0, metavar="N", help="also index --git the newest N Flask commits")
    parser.add_argument("--histories", type=Path, default=HISTORIES, help="the folder of flask-docs and flask.jsonl")
    args = parser.parse_args()
    if not (args.histories / "flask-docs").is_dir():
        sys.exit(f"{args.histories / 'flask-docs'} is missing")
    folder = Path(tempfile.mkdtemp(prefix="captain-memo-bench-engine-index-"))
    os.environ.update(
        CAPTAIN_MEMO_RUNTIME_DIR=str(folder / "run"),
        CAPTAIN_MEMO_SERVICE_TIMEOUT="600",
        CAPTAIN_MEMO_WATCH="0",
    )
    repo = make_repository(folder, args.histories, args.git)
    base = folder / "base.db"
    fill(base, args.memories, "random", str(REPO))
    queries = iter(identifier(100 + i) for i in range(10**6))
    print(f"load average at the start: {load()}")
    ratios, idle_p95s, during_p95s = [], [], []
    for run in range(args.runs):
        print(f"run {run + 1}:")
        took: dict[str, float] = {}
        for way in ("own", "engine", "recalls") if run % 2 == 0 else ("engine", "own", "recalls"):
            db = folder / f"run{run}-{way}.db"
            shutil.copy(base, db)
            if way == "own":
                took[way], cpu = index(repo, db, args, own=True)
                print(f"  {'own process':<22} {took[way]:6.1f} s (its process {cpu:5.1f} s CPU)")
                continue
            took[way], idle, during = through_engine(repo, db, args, queries, timed=way == "recalls")
            if idle:
                idle_p95s.append(percentile(idle, 0.95))
                during_p95s.append(percentile(during, 0.95))
                print(line("recall idle", idle))
                print(line("recall during the index", during, idle_p95s[-1]))
        ratios.append(took["engine"] / took["own"])
        print(f"  engine / own process: {ratios[-1]:.2f}x   (load average {load()})")
    print(
        "summary: engine / own process "
        + ", ".join(f"{r:.2f}x" for r in ratios)
        + "; recall p95 during / idle "
        + ", ".join(f"{d / i:.2f}x" for d, i in zip(during_p95s, idle_p95s))
    )
    print(f"load average at the end: {load()}")
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
