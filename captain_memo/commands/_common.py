"""What the subcommands share: opening the engine, the caller's git context, output."""

from __future__ import annotations

import json
import sys
import time

from captain_memo.paths import db_path


def open_engine(args, embedder=None):
    from captain_memo.commands._log import configure
    from captain_memo.engine import Engine

    configure(getattr(args, "verbose", False))
    return Engine.open(args.db or db_path(), embedder)


def run_request(args, op: str, request) -> dict:
    """The answer to an app.py request (``recall``, ``remember``): from the warm service
    (captain_memo/service/) when there is one, else computed in this process."""
    from captain_memo import app

    data = None if getattr(args, "no_service", False) else _ask_service(args, op, request.to_json())
    if data is not None:
        return data
    engine = open_engine(args)
    try:
        return getattr(app, op)(engine, request)
    finally:
        engine.close()


def _ask_service(args, op: str, request: dict) -> dict | None:
    import os

    from captain_memo.service.client import call

    # Absolute: the service runs in another folder.
    return call(op, request, os.path.abspath(os.path.expanduser(str(args.db or db_path()))))


def open_store(args):
    from captain_memo.commands._log import configure
    from captain_memo.store import Store

    configure(getattr(args, "verbose", False))
    return Store(args.db or db_path())


def add_context_args(parser, branch: bool = True) -> None:
    parser.add_argument("--project", help="repository the memory belongs to (default: the current directory's "
                                          "repository; 'none' for a personal note)")
    if branch:
        parser.add_argument("--branch", help="branch (default: the current git branch)")


def add_quiet_arg(parser) -> None:
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress line on a terminal (there is none when stderr is not a terminal)")


def add_secrets_arg(parser) -> None:
    parser.add_argument("--allow-secrets", action="store_true",
                        help="store text that looks like a credential as it is (default: refuse; "
                             "CAPTAIN_MEMO_REDACT_SECRETS=1 stores it redacted)")


def context(args):
    """The caller's git context, with --project and --branch applied."""
    from captain_memo.gitctx import git_context, with_overrides

    return with_overrides(git_context(), getattr(args, "project", None), getattr(args, "branch", None))


def print_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def age(seconds: float) -> str:
    days = seconds / 86400
    if days < 1:
        hours = seconds / 3600
        return f"{hours:.0f}h" if hours >= 1 else "now"
    if days < 60:
        return f"{days:.0f}d"
    if days < 730:
        return f"{days / 30:.0f}mo"
    return f"{days / 365:.0f}y"


def parse_date(text: str | None) -> float | None:
    """ISO date or datetime (naive means UTC) to epoch seconds."""
    if not text:
        return None
    from datetime import datetime, timezone

    from captain_memo.errors import InputError

    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"cannot read the date {text!r}; use ISO form like 2026-03-01 or 2026-03-01T09:30") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def now() -> float:
    return time.time()
