"""The git context of a folder, cached while its repository's HEAD is unchanged: every long-lived
front end (the editor host, an MCP server, the warm service) asks it once per request."""

from __future__ import annotations

import os
from pathlib import Path

from captain_memo.base.git_context import NO_REPOSITORY, GitContext, git_context


class ContextCache:
    """Git context per folder, reused while the repository's HEAD file is unchanged.

    asking git costs a process per lookup (~2 ms on 2 busy cores), a share of the lookup budget;
    a checkout rewrites HEAD (new inode and mtime), so a cached branch never outlives it.
    """

    def __init__(self):
        self._items: dict[tuple[str, bool], tuple[GitContext, tuple | None]] = {}

    def get(self, path: str | None, share_worktrees: bool, fresh: bool = False) -> GitContext:
        if not path:
            return NO_REPOSITORY
        folder = path if os.path.isdir(path) else os.path.dirname(path) or "."
        key = (folder, share_worktrees)
        cached = self._items.get(key)
        if cached and not fresh and cached[1] is not None and cached[1] == _head_stamp(cached[0]):
            return cached[0]
        ctx = git_context(path, share_worktrees=share_worktrees)
        self._items[key] = (ctx, _head_stamp(ctx))
        return ctx


def _head_stamp(ctx: GitContext) -> tuple | None:
    """Identity of the working tree's HEAD file, or None when it cannot be found (never cached)."""
    if not ctx.root:
        return ()
    dot_git = Path(ctx.root) / ".git"
    try:
        if dot_git.is_file():  # a linked worktree: ".git" names its own git dir
            text = dot_git.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir:"):
                return None
            git_dir = Path(text[len("gitdir:") :].strip())
            dot_git = git_dir if git_dir.is_absolute() else Path(ctx.root) / git_dir
        st = (dot_git / "HEAD").stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)
