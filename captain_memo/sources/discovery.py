"""Folders of a repository that look like its documentation but are not indexed: offered to the user.

A plain `captain-memo index` reads only the built-in folders (docs/decisions, .captain-memo/...),
the agents' files and the folders named before. A repository whose 260 reStructuredText pages live
in doc/ and whose changelog is a folder of fragments would read 0 files and say nothing more; this
finds such folders by their names (top level only: walking src/ for stray .txt files would be slow
and would offer noise) and counts the notes in each, by suffix.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from captain_memo.sources.folders import Folder, folder_of, ignored_by_git, note_files
from captain_memo.sources.settings import AGENT_MEMORY_FILES, AGENT_SKILL_DIRS

# Names that hold a project's prose by convention (compared without case).
DOC_NAMES = {
    "doc", "docs", "documentation", "wiki", "handbook", "manual", "guide", "guides", "notes",
    "adr", "adrs", "decisions", "design", "rfc", "rfcs", "runbooks", "playbooks", "knowledge",
}  # fmt: skip
CHANGELOG_NAMES = {"changelog", "changelog.d", "changes", "news", "newsfragments", "changelogs"}


@dataclass(frozen=True)
class Found:
    """A folder worth indexing: its path in the repository and its notes counted by suffix."""

    path: str  # "doc/"
    suffixes: tuple[tuple[str, int], ...]  # ((".rst", 260), (".md", 2)), most first
    changelog: bool = False

    @property
    def files(self) -> int:
        return sum(n for _, n in self.suffixes)

    def describe(self) -> str:
        """``doc/ (260 .rst, 2 .md)`` or ``changelog/ (85 .rst: changelog fragments)``."""
        counts = ", ".join(f"{n:,} {suffix}" for suffix, n in self.suffixes)
        return f"{self.path} ({counts}{': changelog fragments' if self.changelog else ''})"

    def to_json(self) -> dict:
        return {"path": self.path, "files": self.files, "suffixes": dict(self.suffixes), "changelog": self.changelog}


def unindexed_folders(root: Path, indexed: list[Folder]) -> list[Found]:
    """Top-level folders of the repository named like documentation, holding notes that none of
    the ``indexed`` folders reads; most notes first. A folder git ignores (generated docs, a site
    build) is not offered."""
    try:
        with os.scandir(root) as entries:
            names = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    found = []
    ignored = None
    for name in names:
        lowered = name.lower()
        if lowered not in DOC_NAMES and lowered not in CHANGELOG_NAMES:
            continue
        ignored = ignored or ignored_by_git(root)  # asked once, and only when a folder is named so
        if ignored(name, True):
            continue
        listing = note_files(Folder(root / name, "memory", None, None, root))
        left = [f for f in listing.files if folder_of(f, indexed) is None]
        if left:
            counts = Counter(f.suffix.lower() for f in left)
            ordered = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
            found.append(Found(f"{name}/", ordered, lowered in CHANGELOG_NAMES))
    return sorted(found, key=lambda f: -f.files)


AGENTS_FILES = (
    "the coding agents' files (AGENTS.md, CLAUDE.md, GEMINI.md, Copilot, Cursor and Claude rules, skill folders)"
)


def looked_in(shown: list[tuple[Folder, str]]) -> tuple[str, ...]:
    """Where a plain run looked, as the user names each folder, the agents' many files as one entry
    (doc/sources.md lists them): ``docs/decisions/``, ..., ``the coding agents' files (...)``."""
    agents = {*AGENT_MEMORY_FILES, *AGENT_SKILL_DIRS}
    own = [name for folder, name in shown if folder.root is None or folder.stored_path(folder.path) not in agents]
    return (*own, AGENTS_FILES) if len(own) < len(shown) else tuple(own)
