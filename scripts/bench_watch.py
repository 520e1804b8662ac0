"""What following repositories costs: the CPU of an idle engine watching N repositories, and the
delay from `git commit` to the commit stored, p50/p95.

    .venv/bin/python scripts/bench_watch.py --repositories 10 --idle 600 --commits 30

In one process, as the serving engine holds it: a store on the local model (hosting/warm_memo.py's
WarmMemo) and its watcher (hosting/watcher.py), over N real git repositories in a tmp folder, each
indexed once with `index --git` and a note folder. The idle CPU is this process's CPU time (every
thread) over ``--idle`` seconds with nothing changing, as a share of one core. Each delay is from
the moment `git commit` returned to the moment the commit is in the store (read every 10 ms).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

GIT = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def make_repository(root: Path, n: int) -> Path:
    repo = root / f"repo{n:02d}"
    (repo / "docs" / "decisions").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "docs" / "decisions" / "deploy.md").write_text(f"# Deploy {n}\n\nFrom main on Fridays.\n")
    for c in range(20):
        (repo / f"mod{c}.py").write_text(f"v = {c}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", f"Module {c} of repository {n}")
    return repo


def stored(db: Path, sha: str) -> bool:
    # Not read-only: one (mode=ro) met "disk I/O error" while the engine truncated the WAL under it.
    conn = sqlite3.connect(db, timeout=5)
    try:
        return conn.execute("SELECT 1 FROM memories WHERE source_key = ?", (f"commit:{sha}",)).fetchone() is not None
    finally:
        conn.close()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repositories", type=int, default=10)
    parser.add_argument("--idle", type=float, default=600.0, help="seconds of idle watching measured")
    parser.add_argument("--commits", type=int, default=30, help="commits timed from commit to stored")
    args = parser.parse_args()

    from captain_memo.hosting.warm_memo import WarmMemo
    from captain_memo.hosting.watcher import Watcher
    from captain_memo.memo import Memo

    root = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    db = root / "memo.db"
    repos = [make_repository(root, n) for n in range(args.repositories)]
    with Memo.open(db) as memo:
        for repo in repos:
            os.chdir(repo)
            memo.index(git=True, show_progress=False)
    os.chdir(root)
    warm = WarmMemo(db)
    warm.warm_up()
    watcher = Watcher(warm, "events").start()
    watcher.caught_up.wait(120)
    time.sleep(2)  # the first watch registered; the in-memory index built

    cpu, wall = time.process_time(), time.monotonic()
    time.sleep(args.idle)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    print(
        f"idle: {args.repositories} repositories watched ({watcher.status()['how']}), {wall:.0f} s: "
        f"{cpu:.2f} s CPU = {100 * cpu / wall:.3f}% of one core"
    )

    delays = []
    for n in range(args.commits):
        repo = random.Random(n).choice(repos)
        (repo / f"late{n}.py").write_text(f"late = {n}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", f"Late change {n}")
        committed = time.monotonic()
        sha = git(repo, "rev-parse", "HEAD")
        while not stored(db, sha):
            if time.monotonic() - committed > 30:
                raise SystemExit(f"commit {sha} not stored after 30 s")
            time.sleep(0.01)
        delays.append(time.monotonic() - committed)
        time.sleep(1.5)  # commits apart, as a person or an agent makes them
    print(
        f"commit to stored over {len(delays)} commits: p50 {percentile(delays, 0.5):.2f} s, "
        f"p95 {percentile(delays, 0.95):.2f} s, max {max(delays):.2f} s"
    )
    watcher.stop()
    warm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
