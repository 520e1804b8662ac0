#!/usr/bin/env python3
"""One engine per store with the editor open: what Neovim, three agents' MCP servers and the
command line hold in memory together, and how soon an agent's first recall is answered.

    python scripts/bench_one_engine.py [--memories 10000] [--mcp 3] [--db PATH] [--load [--runs 60] [--git REPO]]

1. Fills a store with ``--memories`` synthetic notes (scripts/bench_nvim.py's notes, random unit
   vectors: the search and the index cost the same whatever the values).
2. One engine: the warm service alone on the store, started by the command line, after five
   recalls and three seconds (the in-memory index built): its resident memory (VmRSS).
3. Now: a real headless Neovim with the plugin (its own Python host) recalls once, so its host
   holds the engine and serves it on the store's socket; three recalls from the command line;
   ``--mcp`` `captain-memo mcp` servers spawned with the MCP SDK's stdio client, each timed from
   spawn to its first tools/list and its first recall. Resident memory of Neovim, its host, the MCP
   servers and any service process, plus the largest of the three commands (its peak, from wait4),
   summed; against one engine, and against the engine's own process as it serves them all.
   With ``--load``, first: recalls timed over the socket (answered by the editor's host) with
   nothing else running, during a 720 KB remember and during `captain-memo index --git`, as
   scripts/bench_service.py times them against the service (the index as a user runs it: its texts
   embedded by the editor's engine).
4. Before (each front end an engine of its own, as before the editor served its engine): the
   same, with Neovim's host, the MCP servers (CAPTAIN_MEMO_SERVICE=0) and the command line's warm
   service each holding one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from bench_nvim import argv, fill, identifier, nvim_binary  # noqa: E402
from bench_service import mcp_spawns, pss_mb, recalls_under_load, rss_mb  # noqa: E402


def cli(*args: str, env: dict | None = None) -> float:
    """Run a command; its peak resident memory in MB, as GNU time reads it (a fork of this process
    would count this process's pages until the exec)."""
    with tempfile.NamedTemporaryFile("r") as peak:
        timed = ["/usr/bin/time", "-f", "%M", "-o", peak.name] if Path("/usr/bin/time").exists() else []
        done = subprocess.run(
            [*timed, sys.executable, "-m", "captain_memo.cli.main", *args],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            cwd=REPO,
            timeout=600,
        )
        if done.returncode != 0:
            sys.exit(f"captain-memo {' '.join(args)} failed: {done.stderr}")
        return int(peak.read().strip() or 0) / 1024 if timed else 0.0


def service_pids(folder: Path) -> list[int]:
    """Processes serving a store from the shell (python -c ... captain_memo.hosting.socket_server)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
                if b"captain_memo.hosting.socket_server" in command and str(folder).encode() in command:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def one_engine(db: Path, folder: Path) -> tuple[float, float]:
    for i in range(5):
        cli("recall", "--all-projects", identifier(i))
    time.sleep(3)
    from captain_memo.hosting.client import control

    status = control("status", db)
    assert status is not None and status.get("host") == "service", status
    memory = rss_mb(status["pid"]), pss_mb(status["pid"])
    control("stop", db)
    time.sleep(1)
    return memory


def start_editor(nvim: str, db: Path, env: dict):
    import pynvim

    env = {**os.environ, **env, "CAPTAIN_MEMO_DB": str(db)}
    cmd = ["env", "-i", *(f"{k}={v}" for k, v in env.items())] + argv(
        nvim, True, "--embed", "--cmd", f"let g:python3_host_prog = '{sys.executable}'"
    )
    editor = pynvim.attach("child", argv=cmd)
    editor.exec_lua("""
        vim.api.nvim_create_autocmd('User', { pattern = 'CaptainMemoResults', callback = function()
          vim.g.bench_done = true
        end })""")
    editor.exec_lua("vim.g.bench_done = nil vim.cmd('CaptainMemo recall ' .. ...)", identifier(7))
    deadline = time.monotonic() + 300
    while not editor.exec_lua("return vim.g.bench_done"):
        if time.monotonic() > deadline:
            sys.exit("the editor's recall timed out:\n" + editor.command_output("messages"))
        time.sleep(0.05)
    time.sleep(3)  # the in-memory index builds in the background
    return editor


def arrangement(title: str, nvim: str, db: Path, folder: Path, args, apart: bool, base: tuple) -> None:
    """Neovim, the command line and ``args.mcp`` MCP servers on the store; ``apart``: an engine each;
    ``args.load``: recalls timed while a long remember and an `index --git` run (the editor serving)."""
    mcp = args.mcp
    editor = start_editor(nvim, db, {"CAPTAIN_MEMO_SERVICE": "0"} if apart else {})
    try:
        if args.load and not apart:
            recalls_under_load(db, args)
        editor_pid = editor.exec_lua("return vim.fn.getpid()")
        host_pid = editor.exec_lua("return vim.fn.jobpid(require('captain_memo.host').job())")
        cli_mb = max(cli("recall", "--all-projects", identifier(20 + i)) for i in range(3))
        print(f"{title}:")
        rss: dict[str, float] = {}
        pss: dict[str, float] = {}

        def measure(servers: list[int]) -> None:
            parts = {"Neovim": [editor_pid], "its host": [host_pid], "MCP servers": servers}
            parts["service"] = service_pids(folder)
            rss.update({name: sum(map(rss_mb, pids)) for name, pids in parts.items()})
            pss.update({name: sum(map(pss_mb, pids)) for name, pids in parts.items()})

        times, _, _ = anyio.run(mcp_spawns, db, mcp, {"CAPTAIN_MEMO_SERVICE": "0"} if apart else {}, measure)
        for listed, recalled, _, one in times:
            print(f"  MCP spawn -> tools/list {listed:6.0f} ms   first recall {recalled:6.0f} ms   {one:5.1f} MB")
        print("  " + ", ".join(f"{name} {rss[name]:.0f} MB (Pss {pss[name]:.0f})" for name in rss))
        print(f"  the largest of three commands {cli_mb:.0f} MB at its peak")
        total, total_pss = sum(rss.values()) + cli_mb, sum(pss.values()) + cli_mb
        print(
            f"  total {total:.0f} MB = {total / base[0]:.2f}x one engine; "
            f"by Pss {total_pss:.0f} MB = {total_pss / base[1]:.2f}x"
        )
        if not apart:  # the engine that serves them all, as it serves them (the SDK for the agents' sessions)
            engine = rss["its host"], pss["its host"]
            print(
                f"  = {total / engine[0]:.2f}x the engine's own process as it serves them ({engine[0]:.0f} MB); "
                f"by Pss {total_pss / engine[1]:.2f}x ({engine[1]:.0f} MB)"
            )
    finally:
        editor.close()
        time.sleep(1)
        from captain_memo.hosting.client import control

        control("stop", db)
        time.sleep(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--mcp", type=int, default=3)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--load", action="store_true", help="time recalls under load, the editor serving")
    parser.add_argument("--runs", type=int, default=60, help="recalls idle (with --load)")
    parser.add_argument("--git", type=Path, default=REPO, help="the repository `index --git` reads (with --load)")
    args = parser.parse_args()
    nvim = nvim_binary()
    folder = Path(tempfile.mkdtemp(prefix="captain-memo-bench-engine-"))
    db = args.db or folder / "memo.db"
    os.environ.update(
        {
            "CAPTAIN_MEMO_DB": str(db),
            "CAPTAIN_MEMO_RUNTIME_DIR": str(folder / "run"),
            "CAPTAIN_MEMO_SERVICE_TIMEOUT": "600",
            "XDG_DATA_HOME": str(folder / "data"),
            "XDG_STATE_HOME": str(folder / "state"),
        }
    )
    fill(db, args.memories, "random", str(REPO))
    print(f"{args.memories:,} memories; load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    base = one_engine(db, folder)
    print(f"one engine (the warm service alone): {base[0]:.0f} MB (Pss {base[1]:.0f})")
    arrangement("now: Neovim's host serves its engine", nvim, db, folder, args, apart=False, base=base)
    arrangement("before: an engine in each front end", nvim, db, folder, args, apart=True, base=base)
    print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
