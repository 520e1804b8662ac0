#!/usr/bin/env python3
"""The warm service under load, and what one store's front ends hold in memory.

    python scripts/bench_service.py [--memories 10000] [--runs 40] [--mcp 3] [--db PATH] [--git REPO]

1. Fills a store with ``--memories`` synthetic notes (scripts/bench_nvim.py's notes, random unit
   vectors: filling takes seconds, and the search costs the same whatever the values).
2. Starts the warm service for it (the local model, in its own process) through the command
   line's client, then times ``--runs`` recalls of distinct identifiers over the socket (the
   client's own round trip: request, search, answer) while nothing else runs (idle); while a
   720 KB remember goes through the same service; and while `captain-memo index --git` runs on
   ``--git`` (default: this repository) in its own process, as a user runs it (its texts embedded
   by the engine serving the store).
3. Spawns ``--mcp`` `captain-memo mcp` servers on the store with the MCP SDK's stdio client and
   times spawn -> first tools/list and the first recall after it; twice: as thin clients of the
   warm service (the default), and each with an engine of its own (CAPTAIN_MEMO_SERVICE=0 for the
   servers, as every MCP server ran before it asked the service).
4. Reads each MCP server's resident memory (VmRSS) after its first tools/list and after its first
   recall, and sums the service's and the servers' (VmRSS, and Pss: shared pages such as
   libpython's divided among the processes that map them, so the sum is what they hold together).

``--no-load`` leaves out step 2's recalls under load (the memory and spawn figures only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from bench_nvim import fill, identifier, percentile  # noqa: E402

REMEMBER_BYTES = 720_000


def rss_mb(pid: int) -> float:
    return _kb(Path(f"/proc/{pid}/status"), "VmRSS:") / 1024


def pss_mb(pid: int) -> float:
    return _kb(Path(f"/proc/{pid}/smaps_rollup"), "Pss:") / 1024


def _kb(path: Path, field: str) -> int:
    for line in path.read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def recall_ms(db: Path, query: str) -> float:
    from captain_memo.hosting.client import call
    from captain_memo.requests import operations

    started = time.perf_counter()
    answer = call("recall", operations.RecallRequest(query, str(REPO), all_projects=True).to_json(), db)
    if answer is None:
        sys.exit("the service did not answer (see its log in the runtime folder)")
    return (time.perf_counter() - started) * 1000


def timed_recalls(db: Path, queries: list[str], busy=None) -> list[float]:
    """Recall latencies; with ``busy`` (a thread), only those made while it is still running."""
    out = []
    for query in queries:
        if busy is not None and not busy.is_alive():
            break
        out.append(recall_ms(db, query))
        time.sleep(0.05)
    return out


def long_remember(db: Path) -> threading.Thread:
    from captain_memo.hosting.client import call
    from captain_memo.requests import operations

    words = "ledger invoice rounding retry tenant cache policy decision because".split()
    text = " ".join(words[i % len(words)] + str(i % 97) for i in range(REMEMBER_BYTES // 8))[:REMEMBER_BYTES]

    def run():
        started = time.perf_counter()
        call(
            "remember",
            operations.RememberRequest(text, str(REPO), request_key=operations.new_request_key()).to_json(),
            db,
        )
        print(f"  (the 720 KB remember took {time.perf_counter() - started:.1f} s)")

    return threading.Thread(target=run)


def git_index(db: Path, repo: Path) -> threading.Thread:
    def run():
        from captain_memo.hosting.client import control

        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "captain_memo.cli.main", "index", "--git", "-q"],
            cwd=repo,
            env={**os.environ, "CAPTAIN_MEMO_DB": str(db)},
            check=False,
            capture_output=True,
            text=True,
        )
        took = time.perf_counter() - started
        embedded = ((control("status", db) or {}).get("embedded") or {}).get("texts", 0)
        print(f"  (index --git took {took:.1f} s, exit {done.returncode}; the engine embedded {embedded:,} texts)")
        if done.stderr:
            print("  " + done.stderr.strip().replace("\n", "\n  "))

    return threading.Thread(target=run)


def line(name: str, values: list[float], idle_p95: float | None = None) -> str:
    p95 = percentile(values, 0.95)
    ratio = f"  = {p95 / idle_p95:.2f}x idle p95" if idle_p95 else ""
    return f"  {name:<28} n {len(values):3d}  p50 {statistics.median(values):7.1f} ms  p95 {p95:7.1f} ms{ratio}"


async def mcp_spawns(
    db: Path, count: int, env: dict, while_running=None
) -> tuple[list[tuple[float, ...]], float, float]:
    """Per server: ms spawn -> first tools/list, ms of the first recall after it, and its VmRSS (MB)
    after each; then the servers' summed VmRSS and Pss once all run. ``while_running(pids)``: called
    while they all run (to measure them beside other processes)."""
    import mcp_types as types
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    script = Path(sys.executable).parent / "captain-memo"
    times, pids = [], []
    async with anyio.create_task_group() as group:
        done = anyio.Event()

        async def one(i: int):
            params = StdioServerParameters(command=str(script), args=["mcp"], cwd=str(REPO), env={**os.environ, **env})
            with open(os.devnull, "w") as errlog:
                started = time.perf_counter()
                async with Client(
                    stdio_client(params, errlog=errlog),
                    mode="legacy",
                    read_timeout_seconds=300,
                    client_info=types.Implementation(name="bench", version="1"),
                ) as session:
                    await session.list_tools()
                    listed = time.perf_counter()
                    [pid] = set(mcp_children()) - set(pids)
                    rss_listed = rss_mb(pid)
                    await session.call_tool("recall", {"query": identifier(i + 3)})
                    recalled = (time.perf_counter() - listed) * 1000
                    times.append(((listed - started) * 1000, recalled, rss_listed, rss_mb(pid)))
                    pids.append(pid)
                    await done.wait()

        for i in range(count):
            group.start_soon(one, i)
            while len(times) <= i:  # one at a time: each spawn timed alone
                await anyio.sleep(0.05)
        await anyio.sleep(1)
        rss, pss = sum(map(rss_mb, pids)), sum(map(pss_mb, pids))
        if while_running is not None:
            while_running(pids)
        done.set()
    return times, rss, pss


def mcp_children() -> list[int]:
    """This process's children running `captain-memo mcp` (an argument "mcp", not a path holding it)."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if stat[1] == me and b"mcp" in command.split(b"\0"):
                found.append(int(entry.name))
    return found


def recalls_under_load(db: Path, args) -> None:
    queries = [identifier(100 + i) for i in range(args.runs * 20)]
    idle = timed_recalls(db, queries[: args.runs])
    print("recall latency over the service's socket (client round trip):")
    print(line("idle", idle))
    base = percentile(idle, 0.95)
    busy = long_remember(db)
    busy.start()
    during = timed_recalls(db, queries[args.runs :], busy)
    busy.join()
    print(line("during a 720 KB remember", during, base))
    busy = git_index(db, args.git)
    busy.start()
    during = timed_recalls(db, queries[args.runs * 10 :], busy)
    busy.join()
    print(line("during index --git", during, base))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--mcp", type=int, default=3)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--git", type=Path, default=REPO)
    parser.add_argument("--no-load", action="store_true", help="skip the recalls under load")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="captain-memo-bench-service-"))
    db = args.db or folder / "memo.db"
    os.environ["CAPTAIN_MEMO_DB"] = str(db)
    os.environ["CAPTAIN_MEMO_RUNTIME_DIR"] = str(folder / "run")
    os.environ["CAPTAIN_MEMO_SERVICE_TIMEOUT"] = "600"
    fill(db, args.memories, "random", str(REPO))

    from captain_memo.hosting.client import control

    print("service: starting and warming up")
    for i in range(5):
        recall_ms(db, identifier(i))
    time.sleep(3)  # the in-memory index builds in the background
    print(f"load average: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    if not args.no_load:
        recalls_under_load(db, args)
    service = control("status", db)
    for title, env in (("thin clients of the service", {}), ("an engine each", {"CAPTAIN_MEMO_SERVICE": "0"})):
        times, mcp_mb, mcp_pss = anyio.run(mcp_spawns, db, args.mcp, env)
        service_mb, service_pss = rss_mb(service["pid"]), pss_mb(service["pid"])  # after the servers' calls
        print(f"{args.mcp} MCP servers, {title}: spawn -> first tools/list, then the first recall (VmRSS after each):")
        for listed, recalled, rss_listed, rss_recalled in times:
            print(
                f"  tools/list {listed:7.0f} ms {rss_listed:5.1f} MB   first recall {recalled:7.0f} ms {rss_recalled:5.1f} MB"
            )
        for what, one, servers in (("VmRSS", service_mb, mcp_mb), ("Pss", service_pss, mcp_pss)):
            print(
                f"  {what} at {args.memories:,} memories: service {one:.0f} MB, MCP servers {servers:.0f} MB, "
                f"total {one + servers:.0f} MB = {(one + servers) / one:.2f}x one engine"
            )
    print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    control("stop", db)
    return 0


if __name__ == "__main__":
    sys.exit(main())
