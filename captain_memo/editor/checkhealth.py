"""`:checkhealth captain_memo`: the plugin's settings and every probe of what Captain Memo depends on
(the door's ``health_probes``: captain_memo/engine/probes.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from captain_memo.config import team_config
from captain_memo.editor.editor_requests import one_line
from captain_memo.errors import CaptainMemoError, ReadOnlyStoreError, StoreError
from captain_memo.hosting.editor_settings import EditorSettings
from captain_memo.memo import Memo, health_probes


def health_report(settings: dict | None = None, context: str | None = None) -> list[dict]:
    """Each thing the plugin depends on: ``{"item", "status": ok|warn|error, "detail"}``."""
    try:
        cfg = EditorSettings.from_dict(settings)
    except CaptainMemoError as exc:
        return [{"item": "settings", "status": "error", "detail": str(exc)}]
    probes = health_probes(cfg.embed_config(), context, cfg.share_worktrees)
    report = [
        _check("package", probes["package"]),
        _check("sqlite", probes["sqlite"]),
        _check("sqlite-vec", probes["sqlite-vec"]),
        _check("fts5", probes["fts5"]),
        _check("database", lambda: database(cfg.database_path(), cfg.embed_config())),
        _check("embedding", probes["embedding"], failure="warn"),
        _check("repository", probes["repository"]),
        _check("watching", lambda: watching(cfg.database_path()), failure="warn"),
    ]
    if team_config().url is not None:  # a failing team store leaves recall answering locally: a warning
        report.append(_check("team", lambda: team(cfg.database_path(), cfg.embed_config()), failure="warn"))
    return report


def database(path: Path, embed_config) -> str:
    """The database can be written and holds vectors of the configured model (checked without
    loading it); a file not there yet is fine when its folder can be written."""
    if not path.exists():
        folder = next(p for p in path.parents if p.exists())
        if not os.access(folder, os.W_OK):
            raise StoreError(f"{path} does not exist and {folder} is not writable")
        return f"{path} does not exist yet; it is created on the first save"
    with Memo.open(path, embed_config=embed_config) as memo:  # migrates: a file that is not a database fails
        return memo.health()


def watching(path: Path) -> str:
    """What the engine serving the store follows, and how (events or polling)."""
    from captain_memo.hosting.client import control
    from captain_memo.hosting.watcher import watching_lines

    answer = control("status", path)
    if answer is None or "unanswered" in answer:
        return "no engine serves the store yet: it follows the indexed repositories once one does"
    return "; ".join(line.strip() for line in watching_lines(answer.get("watching"))) or "not reported by its engine"


def team(path: Path, embed_config) -> str:
    """The team store answers: its size, model and schema; raises what failed (password masked)."""
    with Memo.open(path, embed_config=embed_config) as memo:
        checks = memo.team_check()
    if not checks:
        raise StoreError("no team store is set (CAPTAIN_MEMO_TEAM_DB)")
    _, ok, detail = checks[0]
    if not ok:
        raise StoreError(detail)
    return detail


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
