#!/usr/bin/env python3
"""One engine per store with the editor open: what Neovim, three agents' MCP servers and the
command line hold in memory together, and how soon an agent's first recall is answered.

    python scripts/bench_one_engine.py [--memories 10000] [--mcp 3] [--db PATH]

1. Fills a store with ``--memories`` synthetic notes (scripts/bench_nvim.py's notes, random unit
   vectors: the search and the index cost the same whatever the values).
2. One engine: the warm service alone on the store, started by the command line, after five
   recalls and three seconds (the in-memory index built): its resident memory (VmRSS).
3. Now: a real headless Neovim with the plugin (its own Python host) recalls once, so its host
   holds the engine and serves it on the store's socket; three recalls from the command line;
   ``--mcp`` `captain-memo mcp` servers spawned with the MCP SDK's stdio client, each timed from
   spawn to its first tools/list and its first recall. Resident memory of Neovim, its host, the MCP
   servers and any service process, plus the largest of the three commands (its peak, from wait4),
   summed.
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
from bench_service import mcp_spawns, rss_mb  # noqa: E402


def cli(*args: str, env: dict | None = None) -> float:
    """Run a command; its peak resident memory in MB (its own, from wait4)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "captain_memo.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )
    assert child.stderr is not None
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"captain-memo {' '.join(args)} failed: {stderr.decode()}")
    return usage.ru_maxrss / 1024


def service_pids(folder: Path) -> list[int]:
    """Processes serving a store from the shell (python -c ... captain_memo.service.server)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"captain_memo.service.server" in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def one_engine(db: Path, folder: Path) -> float:
    for i in range(5):
        cli("recall", "--all-projects", identifier(i))
    time.sleep(3)
    from captain_memo.service.client import control

    status = control("status", db)
    assert status is not None and status.get("host") == "service", status
    memory = rss_mb(status["pid"])
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


def arrangement(title: str, nvim: str, db: Path, folder: Path, mcp: int, apart: bool, base: float) -> None:
    """Neovim, the command line and ``mcp`` MCP servers on the store; ``apart``: an engine each."""
    editor = start_editor(nvim, db, {"CAPTAIN_MEMO_SERVICE": "0"} if apart else {})
    try:
        editor_pid = editor.exec_lua("return vim.fn.getpid()")
        host_pid = editor.exec_lua("return vim.fn.jobpid(require('captain_memo.host').job())")
        cli_mb = max(cli("recall", "--all-projects", identifier(20 + i)) for i in range(3))
        times, mcp_mb = anyio.run(mcp_spawns, db, mcp, {"CAPTAIN_MEMO_SERVICE": "0"} if apart else {})
        services = service_pids(folder)
        service_mb = sum(rss_mb(pid) for pid in services)
        nvim_mb, host_mb = rss_mb(editor_pid), rss_mb(host_pid)
        print(f"{title}:")
        for listed, recalled in times:
            print(f"  MCP spawn -> tools/list {listed:6.0f} ms   first recall {recalled:6.0f} ms")
        total = nvim_mb + host_mb + mcp_mb + service_mb + cli_mb
        print(
            f"  Neovim {nvim_mb:.0f} MB, its host {host_mb:.0f} MB, {mcp} MCP servers {mcp_mb:.0f} MB, "
            f"{len(services)} service process(es) {service_mb:.0f} MB, largest command {cli_mb:.0f} MB"
        )
        print(f"  total {total:.0f} MB = {total / base:.2f}x one engine")
    finally:
        editor.close()
        time.sleep(1)
        from captain_memo.service.client import control

        control("stop", db)
        time.sleep(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--mcp", type=int, default=3)
    parser.add_argument("--db", type=Path)
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
    print(f"one engine (the warm service alone): {base:.0f} MB")
    arrangement("now: Neovim's host serves its engine", nvim, db, folder, args.mcp, apart=False, base=base)
    arrangement("before: an engine in each front end", nvim, db, folder, args.mcp, apart=True, base=base)
    print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
