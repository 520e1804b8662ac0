"""Probes of what Captain Memo depends on, shared by `captain-memo doctor` and the editor's
`:checkhealth`. Each returns a one-line description when it works and raises, saying why, when not.
"""

from __future__ import annotations

import os
from pathlib import Path

from captain_memo.base.git_context import git_context


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


def embedding(embed_config) -> str:
    """The configured embedder answers, and how fast."""
    from captain_memo.embeddings import probe_provider

    return probe_provider(embed_config)


def repository(context: str | None, share_worktrees: bool) -> str:
    ctx = git_context(context or os.getcwd(), share_worktrees=share_worktrees)
    if not ctx.project:
        return "not inside a git repository: memories saved here are personal notes"
    return f"{ctx.project} on {ctx.branch or 'no branch'}"
