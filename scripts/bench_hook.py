"""The prompt hook's latency: `captain-memo hook` as an agent runs it, warm and cold.

    python scripts/bench_hook.py [--runs 30] [--db memo.db]

Indexes this repository's doc/ folder (real text) into a temporary store (or uses ``--db``), then
times whole processes from spawn to exit, each given a prompt-submit event on stdin as Claude Code
sends it: `python -c pass` (the floor), the hook warm (answered by the warm service, started once
before timing) and cold (CAPTAIN_MEMO_SERVICE=0: imports, model load and store open in the
process), and the session-start hook (titles from the store, no model). Every prompt is a different
question (no cache helps); runs are interleaved so a change in the machine's load touches every
kind alike. Prints wall p50/p95 per kind and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cli import command, load, percentile  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = [
    "how does the ranker explain each multiplier it applied?",
    "what happens when the embedding server is down during a recall?",
    "why are private spans never stored?",
    "how do I set up the team store on PostgreSQL?",
    "what does the warm service do when the store is moved away?",
    "which folders does a plain index read?",
    "how are credentials redacted before saving?",
    "what is Tide and how does opening a memory affect it?",
    "how do I restore a backup of the store?",
    "what does recall --explain print?",
]


def timed(argv: list[str], env: dict, folder: Path, stdin: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=folder, input=stdin, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return seconds


def event(name: str, prompt: str | None = None) -> str:
    payload = {"session_id": "bench", "transcript_path": "/dev/null", "cwd": str(ROOT), "hook_event_name": name}
    return json.dumps(payload | ({"prompt": prompt} if prompt else {"source": "startup"}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--db", help="an existing store (default: doc/ indexed into a temporary one)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="captain-memo-bench-hook-"))
    cli = command()
    try:
        base = {
            k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_MEMO_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        db = Path(args.db) if args.db else folder / "memo.db"
        warm = {**base, "CAPTAIN_MEMO_DB": str(db), "CAPTAIN_MEMO_RUNTIME_DIR": str(folder / "run")}
        cold = {**warm, "CAPTAIN_MEMO_SERVICE": "0"}
        if not args.db:
            subprocess.run(cli + ["index", "-q", "doc"], env=cold, cwd=ROOT, check=True, capture_output=True)
        for i in range(3):  # start the service, load the model, let the in-memory index build
            timed(cli + ["hook"], warm, ROOT, event("UserPromptSubmit", f"warm up {i}"))
        time.sleep(2)
        hook = cli + ["hook"]
        kinds = {
            "python -c pass": lambda i: timed([sys.executable, "-c", "pass"], base, ROOT, ""),
            "prompt warm": lambda i: timed(hook, warm, ROOT, event("UserPromptSubmit", f"{PROMPTS[i % 10]} (w{i})")),
            "prompt cold": lambda i: timed(hook, cold, ROOT, event("UserPromptSubmit", f"{PROMPTS[i % 10]} (c{i})")),
            "session start": lambda i: timed(hook, warm, ROOT, event("SessionStart")),
        }
        print(f"before: {load()}")
        runs: dict[str, list[float]] = {name: [] for name in kinds}
        for i in range(args.runs):
            for name, run in kinds.items():
                runs[name].append(run(i))
        print(f"after:  {load()}")
        print(f"{'':<16}{'p50 ms':>8}{'p95 ms':>8}   ({args.runs} whole-process runs each, interleaved)")
        for name, values in runs.items():
            print(f"{name:<16}{percentile(values, 0.5) * 1000:>8.0f}{percentile(values, 0.95) * 1000:>8.0f}")
        subprocess.run(cli + ["service", "stop"], env=warm, cwd=ROOT, stdout=subprocess.DEVNULL)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
