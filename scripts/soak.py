#!/usr/bin/env python3
"""A soak of every front end on one store while the engine changes hands: Neovim serving, three
agents and the shell saving and recalling in a loop, Neovim quitting and starting again every
``--restart-every`` seconds, and `captain-memo index --git` running over a real git history.

    python scripts/soak.py [--minutes 10] [--restart-every 20] [--history ../shared/histories/flask.jsonl]

The repository is rebuilt from ``--history`` (the shared Flask history, captain_memo/bench/histories.py)
when it is there, else this repository is cloned to a temporary folder. Everything runs in a fresh
temporary HOME, XDG_RUNTIME_DIR and store, with the real local model served over HTTP on 127.0.0.1
by this process (scripts/bench_races.py's setup).

- Neovim (the main thread): starts, recalls (its host claims the store), saves one note, recalls
  every 2 s, and quits after ``--restart-every`` seconds; then starts again.
- Three agents (real `captain-memo mcp` relays, their sessions in whichever engine serves): each
  remembers and recalls in turn, 0.2 s apart.
- The shell: `captain-memo remember` and `captain-memo recall` in turn.
- `captain-memo index --git --max-commits 400` over the repository, again and again.

Every loop stops at the deadline; at the end every editor, relay and service is stopped, then any
process still holding this run's store is killed. Printed: calls, answers and errors by kind, saves
acknowledged, lost and doubled (each save's text holds a unique marker, counted in the store
read-only), integrity_check, index runs, editor restarts.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from bench_races import (  # noqa: E402
    Agents,
    Tally,
    World,
    cli_recall,
    cli_remember,
    editor_recall,
    judge,
    marker,
    start_gate,
)

HISTORY = REPO.parent / "shared" / "histories" / "flask.jsonl"
START, STEP = 400, 150  # the branch starts at the 400th commit and moves 150 on before each index
TOPICS = ["request context teardown", "blueprint registration", "json provider", "session cookie", "async views"]


def repository(world: World, history: Path) -> tuple[Path, str]:
    """A real git history to index: the shared one rebuilt, else this repository cloned."""
    root = world.folder / "repo"
    if history.exists():
        from captain_memo.bench.histories import rebuild

        return root, f"{rebuild(history, root)} commits rebuilt from {history.name}"
    if not (REPO / ".git").exists():
        sys.exit(f"{history} is absent and {REPO} is no git repository: name a history with --history")
    subprocess.run(["git", "clone", "-q", "--no-local", str(REPO), str(root)], check=True)
    count = subprocess.run(["git", "-C", str(root), "rev-list", "--count", "HEAD"], capture_output=True, text=True)
    return root, f"{count.stdout.strip()} commits of a clone of {REPO}"


def agent_loop(agents: Agents, index: int, tally: Tally, deadline: float) -> None:
    turn = 0
    while time.monotonic() < deadline:
        topic = TOPICS[turn % len(TOPICS)]
        if turn % 2 == 0:
            text = f"agent {index} {marker('a')}: a note on {topic}, turn {turn}"
            agents.call(tally, index, "remember", {"text": text}).result()
        else:
            agents.call(tally, index, "recall", {"query": f"what do we know about {topic}"}).result()
        turn += 1
        time.sleep(0.2)


def shell_loop(world: World, tally: Tally, deadline: float) -> None:
    turn = 0
    while time.monotonic() < deadline:
        topic = TOPICS[turn % len(TOPICS)]
        if turn % 2 == 0:
            cli_remember(world, tally, f"shell {marker('s')}: a note on {topic}, turn {turn}")
        else:
            cli_recall(world, tally, f"notes on {topic}")
        turn += 1


def first_parent_history(root: Path) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(root), "rev-list", "--first-parent", "--reverse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def index_loop(world: World, root: Path, tally: Tally, deadline: float, runs: list) -> None:
    """`index --git` again and again, the branch moved STEP commits on before each run (as a pull
    would), so every run has new commits to read until the history's end."""
    history = first_parent_history(root)
    position = min(len(history), START)
    while time.monotonic() < deadline:
        subprocess.run(["git", "-C", str(root), "reset", "-q", "--hard", history[position - 1]], check=True)
        position = min(len(history), position + STEP)
        tally.called("index --git")
        started = time.monotonic()
        try:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "captain_memo.cli.main",
                    "index",
                    "--git",
                    "--max-commits",
                    "400",
                    "--json",
                    "-q",
                ],
                capture_output=True,
                text=True,
                env={**os.environ, **world.env},
                cwd=root,
                timeout=900,
            )
        except subprocess.TimeoutExpired as error:
            tally.failed("index --git hung", repr(error))
            continue
        tally.answered()
        runs.append((time.monotonic() - started, done.returncode, git_counts(done.stdout)))
        if done.returncode != 0:
            tally.failed("index --git failed", done.stderr[-600:])


def git_counts(answer: str) -> dict:
    """What an index run said of the history (its --json answer's "git" part)."""
    try:
        return json.loads(answer).get("git") or {}
    except ValueError:
        return {"unreadable answer": answer[-200:]}


def editor_save(editor, tally: Tally) -> None:
    """One note saved from the editor: acknowledged when it says "saved #N"."""
    from nvim_support import saved_id

    mark = marker("e")
    tally.called("editor save")
    editor.lua("vim.g.captain_memo_test_notes = {}")
    editor.nvim.command("CaptainMemo note")
    editor.nvim.current.buffer[:] = [f"Editor note {mark}", "Releases are cut from main on Tuesdays."]
    editor.nvim.command("write")
    try:
        saved_id(editor)
    except AssertionError as error:
        tally.failed("editor save failed", str(error))
        tally.saved(mark, False)
        return
    tally.answered()
    tally.saved(mark, True)
    editor.nvim.command("bwipeout!")


def editor_life(world: World, tally: Tally, until: float) -> None:
    """One Neovim from start to quit: a recall, a save, then a recall every 2 s."""
    from nvim_support import close

    editor = world.editor()
    try:
        turn = 0
        while True:
            tally.called("editor recall")
            try:
                editor_recall(editor, TOPICS[turn % len(TOPICS)])
                tally.answered()
            except AssertionError as error:
                tally.failed("editor recall failed", str(error))
            if turn == 0:
                editor_save(editor, tally)
            turn += 1
            if time.monotonic() >= until:
                break
            time.sleep(min(2.0, max(0.0, until - time.monotonic())))
    finally:
        close(editor)
        world.editors.remove(editor)


def kill_leftovers(world: World) -> list[int]:
    """Processes still holding this run's store in their environment (its folder is unique): killed."""
    killed = []
    needle = f"CAPTAIN_MEMO_DB={world.db}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
        except (OSError, ProcessLookupError):
            continue
    return killed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--restart-every", type=float, default=20.0, help="seconds each Neovim lives")
    parser.add_argument("--history", type=Path, default=HISTORY)
    args = parser.parse_args()

    gate = start_gate()
    world = World(gate.server.url, prefix="captain-memo-soak-")
    root, described = repository(world, args.history)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"{os.cpu_count()} cores, load average {load}; {described}; store {world.db}", flush=True)
    tally = Tally()
    index_runs: list = []
    restarts = 0
    cli_remember(world, tally, f"first {marker('s')}: the store is made before the agents come")
    agents = Agents(world, ["agent-1", "agent-2", "agent-3"])
    started = time.monotonic()
    deadline = started + args.minutes * 60
    workers = [threading.Thread(target=agent_loop, args=(agents, i, tally, deadline)) for i in range(3)]
    workers.append(threading.Thread(target=shell_loop, args=(world, tally, deadline)))
    workers.append(threading.Thread(target=index_loop, args=(world, root, tally, deadline, index_runs)))
    try:
        for worker in workers:
            worker.start()
        while time.monotonic() < deadline:
            editor_life(world, tally, min(deadline, time.monotonic() + args.restart_every))
            restarts += 1
            print(
                f"  {time.monotonic() - started:5.0f} s: Neovim {restarts} quit; {tally.calls} calls so far", flush=True
            )
        for worker in workers:
            worker.join(900)
    finally:
        gate.release()
        agents.close()
        world.close()
        killed = kill_leftovers(world)
    outcome = judge(world, tally)
    report(args, tally, outcome, index_runs, restarts, time.monotonic() - started, killed)
    if not os.environ.get("BENCH_KEEP"):
        world.remove()
    return 0 if outcome.failed == outcome.lost == outcome.doubled == 0 and outcome.integrity == "ok" else 1


def report(args, tally: Tally, outcome, index_runs: list, restarts: int, seconds: float, killed: list[int]) -> None:
    print(f"\n{seconds / 60:.1f} minutes; Neovim started {restarts} times ({args.restart_every:.0f} s each)")
    errors = Counter({kind: n for kind, n in tally.failures.items()})
    print(f"calls {tally.calls}, answered {tally.answers}, errors {sum(errors.values())}")
    for kind, n in sorted(tally.calls_by_kind.items()):
        print(f"  {kind:18} {n:6}")
    for kind, n in sorted(errors.items()):
        print(f"  error: {kind:11} {n:6}")
    acknowledged = len(tally.acknowledged)
    print(
        f"saves acknowledged {acknowledged}, not acknowledged {len(tally.unacknowledged)}; "
        f"stored exactly once {acknowledged - outcome.lost - outcome.doubled}, lost {outcome.lost}, "
        f"doubled {outcome.doubled}; integrity_check {outcome.integrity}"
    )
    if index_runs:
        times = sorted(t for t, _, _ in index_runs)
        print(
            f"index --git runs {len(index_runs)} (failed {sum(1 for _, rc, _ in index_runs if rc)}), "
            f"{times[0]:.1f}-{times[-1]:.1f} s each (median {times[len(times) // 2]:.1f} s)"
        )
        totals: Counter = Counter()
        for _, _, counts in index_runs:
            totals.update({k: v for k, v in counts.items() if isinstance(v, int)})
        print(f"  commits, summed over the runs: {dict(totals)}")
    print(f"processes killed at the end: {len(killed)}")
    print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    for note in outcome.notes[:40]:
        print(f"  {note}")


if __name__ == "__main__":
    sys.exit(main())
