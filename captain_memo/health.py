"""Probes of what Captain Memo depends on, shared by `captain-memo doctor` and the editor's
`:checkhealth`. Each returns a one-line description when it works and raises, saying why, when not.
"""

from __future__ import annotations

import os
from pathlib import Path

from captain_memo.errors import StoreError
from captain_memo.gitctx import git_context


def package() -> str:
    import captain_memo

    return f"captain_memo {captain_memo.__version__} ({Path(captain_memo.__file__).parent})"


def sqlite() -> str:
    from captain_memo.store import health

    return f"SQLite {health.sqlite_version()} (sqlean)"


def sqlite_vec() -> str:
    from captain_memo.store import health

    return "sqlite-vec " + health.sqlite_vec_version()


def fts5() -> str:
    from captain_memo.store import health

    health.fts5_probe()
    return "FTS5 available"


def database(path: Path, embed_config) -> str:
    """The database can be written and holds vectors of the configured model (checked without
    loading it); a file not there yet is fine when its folder can be written."""
    from captain_memo.memo import Memo

    if not path.exists():
        folder = next(p for p in path.parents if p.exists())
        if not os.access(folder, os.W_OK):
            raise StoreError(f"{path} does not exist and {folder} is not writable")
        return f"{path} does not exist yet; it is created on the first save"
    with Memo.open(path, embed_config=embed_config) as memo:  # migrates: a file that is not a database fails
        return memo.health()


def team(path: Path, embed_config) -> str:
    """The team store answers: its size, model and schema; raises what failed (password masked)."""
    from captain_memo.memo import Memo

    with Memo.open(path, embed_config=embed_config) as memo:
        checks = memo.team_check()
    if not checks:
        raise StoreError("no team store is set (CAPTAIN_MEMO_TEAM_DB)")
    _, ok, detail = checks[0]
    if not ok:
        raise StoreError(detail)
    return detail


def embedding(embed_config) -> str:
    """The configured embedder answers, and how fast."""
    from captain_memo.embeddings import probe_provider

    return probe_provider(embed_config)


def repository(context: str | None, share_worktrees: bool) -> str:
    ctx = git_context(context or os.getcwd(), share_worktrees=share_worktrees)
    if not ctx.project:
        return "not inside a git repository: memories saved here are personal notes"
    return f"{ctx.project} on {ctx.branch or 'no branch'}"
