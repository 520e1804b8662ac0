"""`captain-memo observe TEXT`: capture an observation; a newer version of a fact supersedes the old."""

from __future__ import annotations

import sys

from captain_memo.cli.commands._common import (
    add_command,
    add_context_args,
    add_json_arg,
    add_secrets_arg,
    context,
    open_memo,
    print_json,
)
from captain_memo.records import NewMemory, Source

MAX_TITLE_CHARS = 120


HELP = "store an observation (text argument or stdin)"
DESCRIPTION = """An observation is something noticed in passing; it fades unless recalled. One whose first line
states a newer version of a fact already observed on this branch supersedes the older one (see
`supersede --list`)."""


def register(sub) -> None:
    p = add_command(sub, "observe", run, HELP, DESCRIPTION)
    p.add_argument("text", nargs="*", help="the text (read from stdin when absent); its first line is the title")
    p.add_argument("--file", help="the file the observation is about")
    add_json_arg(p)
    add_secrets_arg(p)
    add_context_args(p)


def run(args) -> int:
    from captain_memo.base import secrets

    text = " ".join(args.text) if args.text else sys.stdin.read()
    for finding in secrets.check(text, allow=args.allow_secrets, how_to_allow="rerun with --allow-secrets"):
        print(f"captain-memo: warning: storing a credential as it is ({finding.describe()})", file=sys.stderr)
    ctx = context(args)
    lines = text.strip().splitlines()
    title = lines[0].strip()[:MAX_TITLE_CHARS] if lines else ""
    source = Source(
        path=ctx.relative(args.file) if args.file else None, commit=ctx.commit if args.file else None, origin="cli"
    )
    with open_memo(args) as memo:
        memory_id = memo.remember(
            NewMemory(body=text, kind="observation", title=title, project=ctx.project, branch=ctx.branch, source=source)
        )
        superseded = [(s.old_id, s.title) for s in memo.superseded() if s.new_id == memory_id]
    if args.json:
        print_json({"id": memory_id, "supersedes": [old for old, _ in superseded]})
        return 0
    print(f"observed #{memory_id}")
    for old, old_title in superseded:
        print(f"  supersedes #{old}: {old_title}  (undo: captain-memo supersede --undo {old})")
    return 0
