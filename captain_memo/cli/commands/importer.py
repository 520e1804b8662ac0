"""`captain-memo import FILE.jsonl`: one memory a line (kind, title, text, created_at, branch, source)."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

from captain_memo.base.jsonl import capped_lines
from captain_memo.cli.commands._common import (
    add_command,
    add_context_args,
    add_quiet_arg,
    context,
    open_indexing_memo,
)
from captain_memo.errors import InputError
from captain_memo.records import NewMemory
from captain_memo.requests.import_records import read_import

HELP = "import memories from a JSON-lines file"
DESCRIPTION = """One JSON object a line: kind, title, text, created_at, branch, project, tags, source (a path string
or an object with path, line_start, line_end, commit). Every line is checked first; a line that
cannot be stored is named with its number and reason and the others are imported (--strict: then
none are). Rerunning skips what is already stored."""


def register(sub) -> None:
    p = add_command(sub, "import", run, HELP, DESCRIPTION)
    p.add_argument("file", help="the .jsonl file ('-' for stdin)")
    p.add_argument("--strict", action="store_true", help="import nothing if any line is refused")
    add_context_args(p, branch=False)
    add_quiet_arg(p)


def read_lines(path: str) -> list[str]:
    # Split on newlines only: str.splitlines() also splits on U+2028 and other separators that a
    # JSON string may hold raw, which cut a valid record in two and shifted every line number after it.
    # Each line is read with a byte cap: `import /dev/zero` must not grow without bound.
    try:
        with nullcontext(sys.stdin.buffer) if path == "-" else Path(path).open("rb") as stream:
            return list(capped_lines(stream, "stdin" if path == "-" else path))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_records(path: str, project: str | None) -> list[NewMemory]:
    """Every record of the file, or InputError naming each line that cannot be stored."""
    found = read_import(read_lines(path), project)
    if found.refused:
        raise InputError("; ".join(r.describe(path) for r in found.refused))
    return list(found.memories)


def run(args) -> int:
    project = context(args).project  # --project, else the current repository's (none outside one)
    name = "stdin" if args.file == "-" else args.file
    found = read_import(read_lines(args.file), project)
    for refused in found.refused:
        print(f"captain-memo: {refused.describe(name)}", file=sys.stderr)
    if found.refused and args.strict:
        raise InputError(
            f"nothing was imported (--strict): {len(found.refused)} of "
            f"{len(found.refused) + len(found.memories)} records refused"
        )
    from captain_memo.presentation.words import counted

    with open_indexing_memo(args) as memo:
        added, skipped = memo.import_memories(list(found.memories), quiet=args.quiet)
        pending = memo.pending_vectors()
    print(
        f"imported {counted(added, 'memory')}, {skipped} already present"
        + (f"; {counted(pending, 'chunk')} {'waits' if pending == 1 else 'wait'} for a vector" if pending else "")
        + (f"; {counted(len(found.refused), 'line')} refused" if found.refused else "")
    )
    return 1 if found.refused else 0
