"""`remember`, `show`, `forget`, `supersede` and `publish`: writing and reading single memories.

An id is a local memory's number (``12``) or a team memory's ``t`` and number (``t12``)."""

from __future__ import annotations

import os
import re
import sys
import time

from captain_memo.base.kinds import KINDS
from captain_memo.base.terminal import block, one_line
from captain_memo.base.validation import parse_date
from captain_memo.cli.commands._common import (
    add_command,
    add_context_args,
    add_json_arg,
    add_secrets_arg,
    age,
    open_memo,
    print_json,
    run_request,
)
from captain_memo.presentation.text import marks
from captain_memo.presentation.words import UNKNOWN_AGE
from captain_memo.requests import operations


def register(sub) -> None:
    p = add_command(sub, "remember", remember, "store a memory (text argument or stdin)")
    p.add_argument("text", nargs="*", help="the text (read from stdin when absent)")
    p.add_argument("--kind", choices=KINDS, default="memory", help="memory (curated), skill or observation")
    p.add_argument("--title", default="", help="a title (default: none)")
    p.add_argument("--file", help="the source file the text is about")
    p.add_argument("--lines", help="line range in that file, like 10-24")
    p.add_argument("--date", help="when it was written (ISO date; default now)")
    add_json_arg(p)
    p.add_argument(
        "--team",
        action="store_true",
        help="store it in the team store (CAPTAIN_MEMO_TEAM_DB) for everyone on the project",
    )
    add_secrets_arg(p)
    add_context_args(p)

    p = add_command(sub, "show", show, "open a memory in full (counts as the strongest recall)")
    p.add_argument("id", help="12, or t12 for a team memory; 12:310 shows the part of it at line 310 and its place")
    p.add_argument("--whole", action="store_true", help="with ID:LINE, the whole memory too, after its part")
    add_json_arg(p)

    p = add_command(sub, "forget", forget, "delete a memory")
    p.add_argument("id", help="12, or t12 for a team memory")

    p = add_command(sub, "supersede", supersede, "mark OLD as superseded by NEW (--undo OLD reverses, --list lists)")
    p.add_argument("ids", nargs="*", help="OLD NEW (12, or t12 for a team memory)")
    p.add_argument("--undo", metavar="OLD", help="clear OLD's supersession")
    p.add_argument("--list", action="store_true", help="list superseded memories")

    p = add_command(sub, "publish", publish, "move a local memory to the team store (--keep copies it)")
    p.add_argument("id", help="the local memory's id")
    p.add_argument("--keep", action="store_true", help="keep the local memory too, marked superseded by the team copy")
    add_json_arg(p)


def _lines(text: str | None) -> tuple[int | None, int | None]:
    """``--lines 10`` or ``--lines 10-24``: line numbers from 1, the second not before the first."""
    if not text:
        return None, None
    from captain_memo.errors import InputError
    from captain_memo.requests.import_records import MAX_LINE  # imports the record classes: only when --lines is given

    found = re.fullmatch(r"\s*(\d{1,10})\s*(?:-\s*(\d{1,10})\s*)?", text)
    start, end = (int(found[1]), int(found[2] or found[1])) if found else (0, 0)
    if not 1 <= start <= end <= MAX_LINE:
        raise InputError(f"--lines {text!r}: give a line or a range of lines from 1, like 10 or 10-24")
    return start, end


def remember(args) -> int:
    text = " ".join(args.text) if args.text else sys.stdin.read()
    start, end = _lines(args.lines)
    request = operations.RememberRequest(
        text,
        os.getcwd(),
        kind=args.kind,
        title=args.title,
        file=args.file,
        line_start=start,
        line_end=end,
        created_at=parse_date(args.date),
        project=args.project,
        branch=args.branch,
        allow_secrets=args.allow_secrets,
        team=args.team,
        request_key=operations.new_request_key(),
    )
    data = run_request(args, "remember", request)
    for finding in data["kept_secrets"]:
        print(f"captain-memo: warning: storing a credential as it is ({finding})", file=sys.stderr)
    if data.get("warning"):  # saved all the same (a full disk after the commit): not to be retried
        print(f"captain-memo: warning: {data['warning']}", file=sys.stderr)
    if args.json:
        print_json({"id": data["id"], "pending_vectors": data["pending_vectors"]})
    else:
        pending = data["pending_vectors"]
        note = " (no vector yet: the embedder is down; keyword search finds it meanwhile)" if pending else ""
        print(f"remembered #{data['id']}{note}")
    return 0


def show(args) -> int:
    from captain_memo.base.fields import id_and_line
    from captain_memo.presentation.views import memory_at, opened_json
    from captain_memo.records import memory_json

    memory_id, line = id_and_line(args.id, repr(one_line(args.id)))
    with open_memo(args) as memo:
        m = memo.show(memory_id)
        data, part = memory_at(m, memo.chunk_texts(m.ref), line) if line is not None else (opened_json(m), None)
    if args.json:
        print_json({**memory_json(m), **({"chunk": part} if part else {})})
        return 0
    print(f"#{m.ref} [{m.kind}] {one_line(m.display_title)}")
    meta = [created(time.time() - m.created_at), *marks(data), m.branch and f"branch {m.branch}", m.source.describe()]
    print("   " + one_line(" · ".join(x for x in meta if x)))
    if part:
        lines = f"{one_line(m.source.path or '')}:{part['line_start']}-{part['line_end']}"
        print()
        print(f"── {lines} · {one_line(part['title'])} ──")
        print(block(part["text"]))
        if not args.whole:  # a long section's part is what was asked for; its section only on demand
            print()
            print(f"── show {one_line(args.id.split(':')[0])} --whole for the whole memory ──")
            return 0
        print()
        print(f"── the whole memory: {one_line(m.source.describe())} ──")
    print()
    print(block(m.body))
    return 0


def created(seconds: float) -> str:
    """When a memory was saved, for a reader: "saved just now", "saved 3d ago"."""
    when = age(seconds)
    if when == UNKNOWN_AGE:
        return "saved at an unknown time"
    return "saved just now" if when == "now" else f"saved {when} ago"


def forget(args) -> int:
    with open_memo(args) as memo:
        ref = memo.ref(args.id)
        memo.forget(ref)
    print(f"forgot #{ref}")
    return 0


def supersede(args) -> int:
    from captain_memo.errors import InputError

    with open_memo(args) as memo:
        if args.list:
            for s in memo.superseded():
                how = "auto" if s.automatic else "manual"
                print(f"#{s.old_id} superseded by #{s.new_id} ({how}): {one_line(s.title)}")
            return 0
        if args.undo is not None:
            old = memo.ref(args.undo)
            if memo.unsupersede(old) is None:
                print(f"#{old} was not superseded; nothing changed")
            else:
                print(f"#{old} is current again")
            return 0
        if len(args.ids) != 2:
            raise InputError("supersede takes OLD NEW (or --undo OLD, or --list)")
        old, new = (memo.ref(i) for i in args.ids)
        memo.supersede(old, new)
        print(f"#{old} is superseded by #{new}")
    return 0


def publish(args) -> int:
    with open_memo(args) as memo:
        local = memo.ref(args.id)
        shared = memo.publish(local, keep=args.keep)
    if args.json:
        print_json({"id": str(local), "team_id": str(shared), "kept": args.keep})
    elif args.keep:
        print(f"published #{local} as #{shared}; the local copy stays, superseded by it")
    else:
        print(f"published #{local} as #{shared} (moved to the team store)")
    return 0
