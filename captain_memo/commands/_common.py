"""What the subcommands share: opening the application interface, the caller's git context, output."""

from __future__ import annotations

import json
import sys
import time

from captain_memo.paths import db_path
from captain_memo.presentation.words import age  # noqa: F401 - the commands' one way to say an age


def open_memo(args, embedder=None):
    """The application interface over ``--db`` (default: the configured database); opens nothing yet."""
    from captain_memo.commands._log import configure
    from captain_memo.memo import Memo

    configure(getattr(args, "verbose", False))
    return Memo.open(args.db or db_path(), embedder)


def open_indexing_memo(args):
    """``open_memo`` for a command that embeds many texts in its own process (`index`, `import`):
    while an engine serves the store with the model this command would load, the engine embeds
    them (service/embedder.py), so no second model competes with it for the cores."""
    import os

    from captain_memo.memo import Memo

    embedder = None
    if not getattr(args, "no_service", False):
        from captain_memo.service.embedder import served

        db = os.path.abspath(os.path.expanduser(str(args.db or db_path())))
        embedder = served(db, Memo.configured_embedder())
    return open_memo(args, embedder)


def run_request(args, op: str, request) -> dict:
    """The answer to an app.py request (``recall``, ``remember``): from the warm service
    (captain_memo/service/) when there is one, else computed in this process. ``request`` is the
    request record or its JSON, checked into the record only when it runs here, as the service does."""
    payload = request if isinstance(request, dict) else request.to_json()
    data = None if getattr(args, "no_service", False) else _ask_service(args, op, payload)
    if data is not None:
        return data
    from captain_memo import app

    if isinstance(request, dict):
        request = app.RecallRequest.from_json(request) if op == "recall" else app.RememberRequest.from_json(request)
    with open_memo(args) as memo:
        return getattr(app, op)(memo, request)


def _ask_service(args, op: str, request: dict) -> dict | None:
    import os

    from captain_memo.service.client import call

    # Absolute: the service runs in another folder.
    return call(op, request, os.path.abspath(os.path.expanduser(str(args.db or db_path()))))


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


def context(args):
    """The caller's git context, with --project and --branch applied."""
    from captain_memo.gitctx import git_context, with_overrides

    return with_overrides(git_context(), getattr(args, "project", None), getattr(args, "branch", None))


def print_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def now() -> float:
    return time.time()
