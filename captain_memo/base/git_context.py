"""The git context of a file: its project (repository identity), branch and commit.

Asked of git in one process (``gitcmd.head_state``). A detached HEAD has no branch: the short
commit stands in for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GitContext:
    project: str | None  # the repository's identity; None outside any repository
    branch: str | None
    commit: str | None
    root: str | None  # the working tree's top folder

    def relative(self, path: str | os.PathLike) -> str:
        """``path`` relative to the working tree when it lies inside it."""
        if self.root:
            try:
                return str(Path(path).resolve().relative_to(Path(self.root).resolve()))
            except ValueError:
                pass
        return str(path)


NO_REPOSITORY = GitContext(None, None, None, None)


def with_overrides(ctx: GitContext, project: str | None = None, branch: str | None = None) -> GitContext:
    """``ctx`` with a project (``none`` for a personal note) and a branch the caller named."""
    if project is not None:
        ctx = GitContext(None if project.lower() == "none" else project, ctx.branch, ctx.commit, ctx.root)
    if branch is not None:
        ctx = GitContext(ctx.project, branch or None, ctx.commit, ctx.root)
    return ctx


def git_context(path: str | os.PathLike | None = None, share_worktrees: bool = True) -> GitContext:
    """Context of the repository holding ``path`` (a file or folder; default the working directory).

    Worktrees of one repository share one project identity, the git common dir, unless
    ``share_worktrees`` is False, when each working tree is its own project.
    """
    start = Path(path or os.getcwd())
    start = start if start.is_dir() else start.parent
    if not start.exists():
        return NO_REPOSITORY
    from captain_memo.base.git_commands import head_state

    state = head_state(start)
    if state is None:
        return NO_REPOSITORY
    root, common, commit, branch = state
    if share_worktrees:
        project = str(common.parent if common.name == ".git" else common)
    else:
        project = str(root.resolve())
    if commit is not None and branch is None:
        branch = commit[:10]  # detached
    return GitContext(project, branch, commit, str(root))
