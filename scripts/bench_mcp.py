#!/usr/bin/env python3
"""MCP server speed: warm recall tool-call latency at 10,000 memories beside the same recall
through the library, and the time from spawning `captain-memo mcp` to the first answered tools/list.

    python scripts/bench_mcp.py [--memories 10000] [--runs 50] [--spawns 10] [--vectors random|model] [--db PATH]

1. Fills a store with ``--memories`` synthetic notes, each naming an identifier (the notes of
   scripts/bench_nvim.py; ``--vectors random`` gives them random unit vectors: the exact scan
   costs the same whatever the values, and filling takes seconds rather than minutes). ``--db``
   keeps the store at PATH and reuses it.
2. Spawn: ``--spawns`` times, starts ``captain-memo mcp`` with the MCP SDK's stdio client and times
   from the spawn to the answer of the first tools/list (the handshake included).
3. Recall: one server session and one in-process engine (Engine.open with the in-memory index, as
   the server opens it) over the same store. After a warm-up (model load, index build, page cache),
   each of ``--runs`` distinct identifiers is recalled through both, alternately, so the machine's
   load drifts over both alike: the tool call timed at the client from request to parsed result,
   the library call around ``engine.recall``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tests"))

from bench_nvim import fill, identifier, percentile, stored_project  # noqa: E402


def params(db: Path, cwd: Path):
    from mcp.client.stdio import StdioServerParameters

    script = Path(sys.executable).parent / "captain-memo"
    return StdioServerParameters(command=str(script), args=["mcp"], cwd=str(cwd), env={"CAPTAIN_MEMO_DB": str(db)})


def client(db: Path, cwd: Path, errlog):
    import mcp_types as types
    from mcp import Client
    from mcp.client.stdio import stdio_client

    return Client(
        stdio_client(params(db, cwd), errlog=errlog),
        mode="legacy",
        read_timeout_seconds=120,
        client_info=types.Implementation(name="bench", version="1"),
    )


async def spawn_times(db: Path, cwd: Path, spawns: int, errlog) -> list[float]:
    out = []
    for _ in range(spawns):
        started = time.perf_counter()
        async with client(db, cwd, errlog) as session:
            await session.list_tools()
            out.append((time.perf_counter() - started) * 1000)
    return out


async def recall_times(db: Path, repo: Path, queries: list[str], warmup: int, errlog) -> dict:
    from captain_memo.engine.core import Engine
    from captain_memo.store.memindex import warm_memory_index

    project = str(repo.resolve())
    engine = Engine.open(db, index=warm_memory_index)
    tool, library, server_side, hits = [], [], [], []
    try:
        async with client(db, repo, errlog) as session:
            for i, query in enumerate(queries):
                started = time.perf_counter()
                result = await session.call_tool("recall", {"query": query})
                tool_ms = (time.perf_counter() - started) * 1000
                started = time.perf_counter()
                engine.recall(query, project=project, branch="main", limit=10)
                library_ms = (time.perf_counter() - started) * 1000
                if result.is_error:
                    sys.exit(f"recall failed: {result.content[0].text}")
                if i == 0:
                    first = (tool_ms, library_ms)
                if i == warmup - 1:
                    time.sleep(3)  # let both in-memory indexes finish building before timing
                if i >= warmup:
                    data = result.structured_content
                    tool.append(tool_ms)
                    library.append(library_ms)
                    server_side.append(data["elapsed_ms"])
                    hits.append(query in data["hits"][0]["title"] if data["hits"] else False)
    finally:
        engine.close()
    return {"tool": tool, "library": library, "server": server_side, "top_hit": sum(hits), "first": first}


def summary(name: str, values: list[float]) -> str:
    return (
        f"  {name:<34} p50 {statistics.median(values):7.1f} ms   p95 {percentile(values, 0.95):7.1f} ms   "
        f"min {min(values):6.1f}   max {max(values):7.1f}"
    )


def import_ms(module: str, runs: int = 5) -> float:
    """Median wall time of a fresh Python importing ``module`` (what a spawn pays before serving)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--vectors", choices=("model", "random"), default="random")
    parser.add_argument("--db", type=Path, help="keep the store here and reuse it next time")
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min)")
    with tempfile.TemporaryDirectory(prefix="captain-memo-bench-") as tmp:
        folder = Path(tmp)
        repo = stored_project(args.db) or (args.db.with_name(args.db.stem + "-repo") if args.db else folder / "repo")
        repo.mkdir(parents=True, exist_ok=True)
        if not (repo / ".git").exists():
            subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        db = args.db or folder / "memo.db"
        fill(db, args.memories, args.vectors, str(repo.resolve()))
        queries = [identifier(i * 97 % args.memories) for i in range(args.warmup + args.runs)]
        with open(folder / "server-stderr.log", "w") as errlog:
            spawns = anyio.run(spawn_times, db, repo, args.spawns, errlog)
            found = anyio.run(recall_times, db, repo, queries, args.warmup, errlog)
        print(f"spawn -> first tools/list answered ({args.spawns} spawns, handshake included):")
        print(summary("captain-memo mcp", spawns))
        print(
            f"  for scale: a bare python {import_ms('sys'):.0f} ms; python importing the MCP SDK's server "
            f"{import_ms('mcp.server.lowlevel, mcp.server.stdio'):.0f} ms (medians of 5)"
        )
        print(f"recall, warm, {args.memories:,} memories, {args.runs} distinct identifiers, alternating:")
        print(summary("MCP tool call (client round trip)", found["tool"]))
        print(summary("  of which in the engine (server)", found["server"]))
        print(summary("library (engine.recall in-process)", found["library"]))
        print(f"  the identifier's own note ranked first in {found['top_hit']}/{args.runs} tool calls")
        print(
            f"  the first recall (store opened, model loaded, index build started): tool call "
            f"{found['first'][0]:.0f} ms, library {found['first'][1]:.0f} ms (after Engine.open)"
        )
    print(f"load after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
