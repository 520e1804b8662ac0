"""A command's answer: from the engine serving the store (the warm service or the editor's host)
when one answers, else from a Memo opened in this process. The command line and the prompt hook
both ask through here."""

from __future__ import annotations

from captain_memo.base.paths import db_file, db_path


def open_memo(args, embedder=None):
    """The application interface over ``--db`` (default: the configured database); opens nothing yet."""
    from captain_memo.base.stderr_log import configure
    from captain_memo.memo import Memo

    configure(getattr(args, "verbose", False))
    return Memo.open(args.db or db_path(), embedder)


def run_request(args, op: str, request) -> dict:
    """The answer to an operations.py request (``recall``, ``remember``): from the warm service
    (captain_memo/hosting/) when there is one, else computed in this process. ``request`` is the
    request record or its JSON, checked into the record only when it runs here, as the service does."""
    payload = request if isinstance(request, dict) else request.to_json()
    data = None if getattr(args, "no_service", False) else _ask_service(args, op, payload)
    if data is not None:
        return data
    from captain_memo.requests import operations

    if isinstance(request, dict):
        request = (
            operations.RecallRequest.from_json(request)
            if op == "recall"
            else operations.RememberRequest.from_json(request)
        )
    with open_memo(args) as memo:
        return getattr(operations, op)(memo, request)


def _ask_service(args, op: str, request: dict) -> dict | None:
    import os

    from captain_memo.hosting.client import call

    # Absolute: the service runs in another folder.
    return call(op, request, os.path.abspath(os.path.expanduser(str(args.db or db_file()))))
