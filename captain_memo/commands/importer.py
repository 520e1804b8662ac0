"""`captain-memo import FILE.jsonl`: one memory a line (kind, title, text, created_at, branch, source)."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

from captain_memo.commands._common import add_context_args, add_quiet_arg, context, open_engine, parse_date
from captain_memo.errors import InputError
from captain_memo.jsonl import capped_lines, parse_lines
from captain_memo.progress import Progress
from captain_memo.store import NewMemory, Source

BATCH = 32


def register(sub) -> None:
    p = sub.add_parser("import", help="import memories from a JSON-lines file",
                       description="One JSON object a line: kind, title, text, created_at, branch, source "
                                   "(a path string or an object with path, line_start, line_end, commit). "
                                   "Rerunning skips what is already stored.")
    p.add_argument("file", help="the .jsonl file ('-' for stdin)")
    add_context_args(p, branch=False)
    add_quiet_arg(p)
    p.set_defaults(run=run)


def memory_from_record(record: dict, where: str, project: str | None) -> NewMemory:
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object")
    text = record.get("text") or record.get("body")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: 'text' is missing or empty")
    source = record.get("source")
    if isinstance(source, dict):
        src = Source(path=source.get("path"), line_start=source.get("line_start"), line_end=source.get("line_end"),
                     commit=source.get("commit"), origin="import", filetype=source.get("filetype"))
    else:
        src = Source(path=source if isinstance(source, str) else None, origin="import")
    created = record.get("created_at")
    created_at = float(created) if isinstance(created, (int, float)) else parse_date(created)
    return NewMemory(body=text, kind=record.get("kind") or "memory", title=record.get("title") or "",
                     project=record.get("project", project), branch=record.get("branch"), source=src,
                     created_at=created_at, tags=tuple(record.get("tags") or ()))


def read_records(path: str, project: str | None) -> list[NewMemory]:
    try:
        with (nullcontext(sys.stdin.buffer) if path == "-" else Path(path).open("rb")) as stream:
            lines = list(capped_lines(stream, path))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    return [memory_from_record(record, where, project) for where, record in parse_lines(lines, path)]


def import_memories(engine, memories: list[NewMemory], label: str = "importing",
                    quiet: bool = False) -> tuple[int, int]:
    """Store in batches; returns (added, skipped as already present)."""
    added = skipped = 0
    bar = Progress(len(memories), label, quiet=quiet)
    for start in range(0, len(memories), BATCH):
        batch = memories[start: start + BATCH]
        ids = engine.remember_many(batch)
        added += sum(1 for i in ids if i is not None)
        skipped += sum(1 for i in ids if i is None)
        bar.advance(len(batch))
    bar.close()
    return added, skipped


def run(args) -> int:
    project = context(args).project if args.project is not None else None
    memories = read_records(args.file, project)
    engine = open_engine(args)
    try:
        added, skipped = import_memories(engine, memories, quiet=args.quiet)
        pending = engine.store.counts()["pending_vectors"]
    finally:
        engine.close()
    print(f"imported {added} memories, {skipped} already present"
          + (f"; {pending} chunks wait for a vector" if pending else ""))
    return 0
