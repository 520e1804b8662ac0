"""What the subcommands share: declaring a command and the options several take, opening the
application interface, the caller's git context, output."""

from __future__ import annotations

import sys
import time

from captain_memo.base.paths import db_path
from captain_memo.hosting.answer import open_memo, run_request  # noqa: F401 - the commands' way in
from captain_memo.presentation.words import age  # noqa: F401 - the commands' one way to say an age


def open_indexing_memo(args):
    """``open_memo`` for a command that embeds many texts in its own process (`index`, `import`):
    while an engine serves the store with the model this command would load, the engine embeds
    them (hosting/embedder.py), so no second model competes with it for the cores."""
    import os

    from captain_memo.memo import Memo

    embedder = None
    if not getattr(args, "no_service", False):
        from captain_memo.hosting.embedder import served

        db = os.path.abspath(os.path.expanduser(str(args.db or db_path())))
        embedder = served(db, Memo.configured_embedder())
    return open_memo(args, embedder)


def add_command(sub, name: str, run, help: str, description: str | None = None):
    """The parser of command ``name``, which ``run`` runs; its arguments are added to it next.
    ``description`` is shown reflowed, so it may be written over several lines."""
    parser = sub.add_parser(name, help=help, description=description)
    parser.set_defaults(run=run)
    return parser


def add_json_arg(parser, help: str | None = None) -> None:
    parser.add_argument("--json", action="store_true", help=help)


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
    from captain_memo.base.git_context import git_context, with_overrides

    return with_overrides(git_context(), getattr(args, "project", None), getattr(args, "branch", None))


def print_json(data) -> None:
    import json  # only here: json imports re, which the warm path does without

    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def now() -> float:
    return time.time()
