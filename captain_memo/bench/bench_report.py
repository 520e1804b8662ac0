"""The bench's figures as a Markdown table, one column per store size, and the machine they ran on."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def _timing(result: dict, key: str, recall_key: str | None = None) -> str:
    timing = result.get(key)
    if not timing:
        return "-"
    text = f"{timing['p50']:.1f} / {timing['p95']:.1f}"
    if recall_key and recall_key in result:
        text += f" (recall@10 {result[recall_key]:.3f})"
    return text


def _number(value, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


ROWS = [
    (
        "vector leg, in-memory index, project scope: p50 / p95 ms",
        lambda r: _timing(r, "memindex_project", "memindex_project_recall10"),
    ),
    (
        "vector leg, in-memory index, all projects: p50 / p95 ms",
        lambda r: _timing(r, "memindex_all", "memindex_all_recall10"),
    ),
    ("vector leg, sqlite-vec exact KNN, project scope: p50 / p95 ms", lambda r: _timing(r, "sqlite_vec_project")),
    ("vector leg, sqlite-vec exact KNN, all projects: p50 / p95 ms", lambda r: _timing(r, "sqlite_vec_all")),
    ("keyword leg (FTS5 bm25), project scope: p50 / p95 ms", lambda r: _timing(r, "keyword")),
    (
        "full recall, cached query embedding, in-memory index: p50 / p95 ms",
        lambda r: _timing(r, "recall_cached_memindex"),
    ),
    (
        "full recall, cached query embedding, sqlite-vec (the CLI): p50 / p95 ms",
        lambda r: _timing(r, "recall_cached_sqlite"),
    ),
    (
        "full recall, query embedded by the local model, in-memory index: p50 / p95 ms",
        lambda r: _timing(r, "recall_embedded_memindex"),
    ),
    ("insert, bulk build (synthetic, in partition order): rows/s", lambda r: _number(r.get("build_rows_per_s"))),
    ("insert, Store.add, one memory per transaction: rows/s", lambda r: _number(r.get("add_rows_per_s"))),
    ("database size: MB", lambda r: _number(r.get("db_mb"), 1)),
    ("resident memory, sqlite-vec only: MB", lambda r: _number(r.get("rss_sqlite_mb"))),
    ("resident memory, with the in-memory index: MB", lambda r: _number(r.get("rss_memindex_mb"))),
    ("resident memory, with the index and the local model: MB", lambda r: _number(r.get("rss_with_model_mb"))),
    ("in-memory index arrays: MB", lambda r: _number(r.get("memindex_mb"), 1)),
    ("open + first recall, sqlite-vec: ms", lambda r: _number(r.get("open_first_query_ms"))),
    ("open + index build + first query, in-memory index: ms", lambda r: _number(r.get("memindex_open_first_query_ms"))),
    ("in-memory index catching up after 300 writes: ms", lambda r: _number(r.get("memindex_catch_up_ms"), 1)),
]


def table(results: list[dict]) -> str:
    head = "| | " + " | ".join(f"{r['chunks']:,} chunks" for r in results) + " |"
    lines = [head, "|---|" + "---|" * len(results)]
    for label, cell in ROWS:
        lines.append(f"| {label} | " + " | ".join(cell(r) for r in results) + " |")
    return "\n".join(lines)


def machine() -> str:
    """One line on where the figures were measured."""
    cpu = platform.processor() or platform.machine()
    memory = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f", {int(line.split()[1]) / 2**20:.0f} GB RAM"
                break
    except OSError:
        pass
    import numpy
    import sqlite_vec

    from captain_memo.store.health import sqlite_version

    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return (
        f"{cpu}, {os.cpu_count()} cores{memory}{load}; Python {platform.python_version()}, "
        f"SQLite {sqlite_version()}, sqlite-vec {sqlite_vec.__version__}, numpy {numpy.__version__}"
    )


def markdown(results: list[dict], command: str, machine_line: str) -> str:
    queries = results[0]["queries"] if results else 0
    return (
        f"`{command}`\n\n{machine_line}. {queries} queries per store, one at a time; p50 / p95 in "
        "milliseconds; recall@10 against sqlite-vec's exact search.\n\n" + table(results) + "\n"
    )
