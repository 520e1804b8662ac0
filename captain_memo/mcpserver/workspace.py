"""Where the agent works: the project and branch its memories belong to.

The folder is the first ``file://`` root the client declares (the MCP roots), else the server's
working directory; its git context is read as the editor reads a buffer's (worktrees of one
repository share one project unless told otherwise), and cached while HEAD is unchanged.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from captain_memo.base.git_context import GitContext
from captain_memo.base.git_context_cache import ContextCache

log = logging.getLogger("captain_memo")


def folder_of_root(uri: str) -> tuple[str | None, str]:
    """The local folder a root names (a file root counts as its folder), or None and why it cannot be
    worked in: not a local file URI, gone, a folder this user cannot enter, a path too long."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None, "not a local file:// folder"
    path = Path(unquote(parsed.path))
    try:
        if path.is_file():
            path = path.parent
        if not path.is_dir():
            return None, "no such folder here"
        with os.scandir(path):  # entering and listing it is what reading its git context needs
            pass
    except OSError as exc:
        return None, exc.strerror or type(exc).__name__
    return str(path), ""


def folder_of_roots(uris: list[str]) -> str | None:
    """The first root that names a local folder this user can work in."""
    return next((folder for folder, _ in map(folder_of_root, uris) if folder is not None), None)


class Workspace:
    """The folder the agent works in and its git context."""

    def __init__(self, cwd: str | None = None, share_worktrees: bool = True):
        self.cwd = cwd or os.getcwd()
        self.share_worktrees = share_worktrees
        self.roots: list[str] | None = None  # None until the client has been asked (or cannot be)
        self._contexts = ContextCache()
        self._skipped: set[str] = set()
        self._notices: list[str] = []

    @property
    def folder(self) -> str:
        return folder_of_roots(self.roots or []) or self.cwd

    def set_roots(self, uris: list[str]) -> None:
        """Take the client's roots; a root that cannot be worked in is skipped and said once (in
        the log and in the next tool result), not at every call."""
        if uris == self.roots:
            return
        log.info("mcp: workspace roots %s", ", ".join(_shown(uri) for uri in uris) or "(none)")
        self.roots = uris
        for uri in uris:
            folder, why = folder_of_root(uri)
            if folder is None and uri not in self._skipped:
                self._skipped.add(uri)
                notice = f"Root {_shown(uri)} skipped ({why}); working in {self.folder}."
                log.warning("mcp: %s", notice)
                self._notices.append(notice)

    def take_notices(self) -> list[str]:
        """What the agent has not been told yet about its roots (each said once)."""
        notices, self._notices = self._notices, []
        return notices

    def context(self, fresh: bool = False) -> GitContext:
        return self._contexts.get(self.folder, self.share_worktrees, fresh)


def _shown(uri: str, limit: int = 200) -> str:
    return uri if len(uri) <= limit else uri[:limit] + "…"
