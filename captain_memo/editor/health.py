"""`:checkhealth captain_memo`: the plugin's settings and every probe of captain_memo/health.py."""

from __future__ import annotations

import json
from collections.abc import Callable

from captain_memo import health
from captain_memo.config import team_config
from captain_memo.editor.service import one_line
from captain_memo.editor.settings import EditorSettings
from captain_memo.errors import CaptainMemoError, ReadOnlyStoreError


def health_report(settings: dict | None = None, context: str | None = None) -> list[dict]:
    """Each thing the plugin depends on: ``{"item", "status": ok|warn|error, "detail"}``."""
    try:
        cfg = EditorSettings.from_dict(settings)
    except CaptainMemoError as exc:
        return [{"item": "settings", "status": "error", "detail": str(exc)}]
    report = [
        _check("package", health.package),
        _check("sqlite", health.sqlite),
        _check("sqlite-vec", health.sqlite_vec),
        _check("fts5", health.fts5),
        _check("database", lambda: health.database(cfg.database_path(), cfg.embed_config())),
        _check("embedding", lambda: health.embedding(cfg.embed_config()), failure="warn"),
        _check("repository", lambda: health.repository(context, cfg.share_worktrees)),
    ]
    if team_config().url is not None:  # a failing team store leaves recall answering locally: a warning
        report.append(_check("team", lambda: health.team(cfg.database_path(), cfg.embed_config()), failure="warn"))
    return report


def _check(item: str, probe: Callable[[], str], failure: str = "error") -> dict:
    try:
        return {"item": item, "status": "ok", "detail": probe()}
    except ReadOnlyStoreError as exc:  # readable, so lookups work: a warning, not a failure
        return {"item": item, "status": "warn", "detail": one_line(str(exc))}
    except Exception as exc:
        return {"item": item, "status": failure, "detail": one_line(str(exc) or type(exc).__name__)}


def health_main(argv: list[str]) -> int:
    """Entry for ``:checkhealth``: settings JSON and a context path in, one JSON list out."""
    settings = json.loads(argv[0]) if argv and argv[0] else {}
    context = argv[1] if len(argv) > 1 and argv[1] else None
    print(json.dumps(health_report(settings, context)))
    return 0
