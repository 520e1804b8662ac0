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

from captain_memo.contexts import ContextCache
from captain_memo.gitctx import GitContext

log = logging.getLogger("captain_memo")


def folder_of_roots(uris: list[str]) -> str | None:
    """The first root that names an existing local folder (a file root counts as its folder)."""
    for uri in uris:
        parsed = urlparse(uri)
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            continue
        path = Path(unquote(parsed.path))
        if path.is_file():
            path = path.parent
        if path.is_dir():
            return str(path)
        log.info("mcp: root %s is not a folder here; skipped", uri)
    return None


class Workspace:
    """The folder the agent works in and its git context."""

    def __init__(self, cwd: str | None = None, share_worktrees: bool = True):
        self.cwd = cwd or os.getcwd()
        self.share_worktrees = share_worktrees
        self.roots: list[str] | None = None  # None until the client has been asked (or cannot be)
        self._contexts = ContextCache()

    @property
    def folder(self) -> str:
        return folder_of_roots(self.roots or []) or self.cwd

    def set_roots(self, uris: list[str]) -> None:
        if uris != self.roots:
            log.info("mcp: workspace roots %s", ", ".join(uris) or "(none)")
        self.roots = uris

    def context(self, fresh: bool = False) -> GitContext:
        return self._contexts.get(self.folder, self.share_worktrees, fresh)
