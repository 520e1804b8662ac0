"""What the subcommands share: opening the application interface, the caller's git context, output."""

from __future__ import annotations

import json
import sys
import time

from captain_memo.config import db_path
from captain_memo.gitctx import GitContext, git_context
from captain_memo.records import DAY


def open_memo(args, embedder=None):
    """The application interface over ``--db`` (default: the configured database); opens nothing yet."""
    from captain_memo.memo import Memo

    return Memo.open(args.db or db_path(), embedder)


def add_context_args(parser, branch: bool = True) -> None:
    parser.add_argument(
        "--project",
        help="repository the memory belongs to (default: the current directory's "
        "repository; 'none' for a personal note)",
    )
    if branch:
        parser.add_argument("--branch", help="branch (default: the current git branch)")


def add_quiet_arg(parser) -> None:
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line on a terminal (there is none when stderr is not a terminal)",
    )


def add_secrets_arg(parser) -> None:
    parser.add_argument(
        "--allow-secrets",
        action="store_true",
        help="store text that looks like a credential as it is (default: refuse; "
        "CAPTAIN_MEMO_REDACT_SECRETS=1 stores it redacted)",
    )


def context(args) -> GitContext:
    """The caller's git context, with --project and --branch applied."""
    ctx = git_context()
    project = getattr(args, "project", None)
    if project is not None:
        ctx = GitContext(None if project.lower() == "none" else project, ctx.branch, ctx.commit, ctx.root)
    branch = getattr(args, "branch", None)
    if branch is not None:
        ctx = GitContext(ctx.project, branch or None, ctx.commit, ctx.root)
    return ctx


def print_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def age(seconds: float) -> str:
    days = seconds / DAY
    if days < 1:
        hours = seconds / 3600
        return f"{hours:.0f}h" if hours >= 1 else "now"
    if days < 60:
        return f"{days:.0f}d"
    if days < 730:
        return f"{days / 30:.0f}mo"
    return f"{days / 365:.0f}y"


def now() -> float:
    return time.time()
