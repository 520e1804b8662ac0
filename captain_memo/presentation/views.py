"""A recall, a hit and a memory as JSON for every front end (the stable shapes of doc/json.md).

A hit is the matching chunk of a memory: besides the ranking's own fields (ranking/result.py) it
carries ``chunk`` (the chunk's heading path, its lines, the lines holding the query's words and the
id to open the memory at it) and ``author`` (who wrote a team memory). The front ends add nothing of
their own but where a file is found in the caller's tree (``located``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from captain_memo.presentation.chunks import place, snippet
from captain_memo.records import Memory, memory_json, source_json

if TYPE_CHECKING:
    from captain_memo.base.git_context import GitContext
    from captain_memo.ranking.candidates import Candidate
    from captain_memo.ranking.result import RecallResult


def chunk_json(memory: Memory, chunk_text: str, query: str) -> dict:
    """The hit's own chunk: heading path, lines (in the file when it has some), the snippet holding
    the query's words and the file line of its first line, and ``ref``: the id ``show`` opens at it."""
    where = place(memory, chunk_text)
    found = snippet(where.lines, query, where.title)
    whole = (where.file_start, where.file_end) == (memory.source.line_start, memory.source.line_end)
    own = replace(memory.source, line_start=where.file_start, line_end=where.file_end)
    return {
        "title": where.title,
        "label": own.describe(),
        "line_start": where.file_start,
        "line_end": where.file_end,
        "snippet": found.text,
        "snippet_line": where.file_line(found.line_index),
        "matched": list(found.matched),
        # ``12:310``: memory 12 opened at line 310, when the chunk is a part of a longer memory.
        "ref": memory.ref if whole or where.file_start is None else f"{memory.ref}:{where.file_start}",
    }


def hit_view(hit: Candidate, rank: int, now: float, query: str) -> dict:
    from captain_memo.ranking.result import hit_json as ranked

    return {**ranked(hit, rank, now), "author": hit.memory.author, "chunk": chunk_json(hit.memory, hit.text, query)}


def recall_json(result: RecallResult, now: float | None = None) -> dict:
    """A recall as every front end receives it (doc/json.md)."""
    from captain_memo.ranking.result import result_json

    now = time.time() if now is None else now
    data = result_json(result, now)
    data["hits"] = [hit_view(c, i + 1, now, result.query) for i, c in enumerate(result.hits)]
    return data


def opened_json(memory: Memory, ctx: GitContext | None = None, now: float | None = None) -> dict:
    """A memory in full as a front end shows it: its title as displayed, its author, its age, and its
    file as found in the caller's working tree."""
    from captain_memo.presentation.words import age

    data = memory_json(memory)
    data["title"] = memory.display_title
    data["author"] = memory.author
    data["age"] = age((time.time() if now is None else now) - memory.created_at)
    data["source"] = {
        **source_json(memory.source, label=True),
        "file": located(memory.source.path, ctx, memory.project),
    }
    return data


def located(path: str | None, ctx: GitContext | None, project: str | None) -> str | None:
    """The file a stored source path names, looked for in the caller's working tree first (a
    worktree of the same repository), then in the memory's project folder."""
    from pathlib import Path

    if not path:
        return None
    candidate = Path(path).expanduser()
    if candidate.is_absolute():
        return str(candidate) if candidate.exists() else None
    for base in (ctx.root if ctx else None, project):
        if base and (Path(base) / candidate).exists():
            return str(Path(base) / candidate)
    return None


def locate_hits(data: dict, ctx: GitContext) -> dict:
    """A recall's JSON with each hit's file found in the caller's tree (``source.file``)."""
    for hit in data["hits"]:
        hit["source"]["file"] = located(hit["source"]["path"], ctx, hit["project"])
    return data


def memory_at(memory: Memory, chunks: list[str], line: int) -> tuple[dict, dict]:
    """A memory opened at a line (``show 12:310``): its JSON and its part holding that line."""
    return opened_json(memory), part_at(memory, chunks, line)


def part_at(memory: Memory, chunks: list[str], line: int) -> dict:
    """The chunk of ``memory`` holding file line ``line`` (or the first one after it, for a line
    between two chunks): its heading path, lines and text; InputError for a line outside the memory."""
    from captain_memo.errors import InputError

    src = memory.source
    places = [place(memory, text) for text in chunks]
    inside = [p for p in places if p.file_start is not None and line <= (p.file_end or p.file_start)]
    first = min(inside, key=lambda p: p.file_start or 0, default=None)
    if first is None or not (src.line_start or 0) <= line <= (src.line_end or 0):
        span = f"lines {src.line_start}-{src.line_end} of {src.path}" if src.line_start else "no lines of a file"
        raise InputError(f"memory {memory.ref} covers {span}; line {line} is not in it")
    lines = first.lines
    if first.body_start is not None and first.body_end is not None:
        lines = tuple(memory.body.split("\n")[first.body_start - 1 : first.body_end])  # the file's own lines
    return {"title": first.title, "line_start": first.file_start, "line_end": first.file_end, "text": "\n".join(lines)}
