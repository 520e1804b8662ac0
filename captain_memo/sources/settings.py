"""Where memories come from, as configured: note and skill folders, caps, supersession switches.

Folders come from two places:

- ``CAPTAIN_MEMO_NOTE_DIRS`` and ``CAPTAIN_MEMO_SKILL_DIRS``, colon-separated. An absolute entry
  (or one starting with ``~``) is a personal folder: its memories belong to no project. A relative
  entry is a folder inside every repository, added to the defaults below.
- Repository defaults: ``docs/decisions``, ``docs/adr`` and ``.captain-memo/memory`` hold curated
  memory; ``.captain-memo/skills`` holds skills; and the coding agents' own files (``AGENTS.md``,
  ``CLAUDE.md``, ``CLAUDE.local.md``, ``.cursor/rules``, ``.claude/rules``, ``.claude/skills``,
  ``.agents/skills`` ...).

Every number is an environment variable too; a value that does not parse is reported once, naming
the variable, and the default is used.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("captain_memo")

# What coding agents are told and learn, kept in the repository by each agent's convention: the
# instruction files are memory (rules), the skill folders hold one folder per skill with a SKILL.md.
AGENT_MEMORY_FILES = (
    "AGENTS.md",
    "CLAUDE.md",
    ".claude/CLAUDE.md",
    "CLAUDE.local.md",
    ".claude/rules",
    "GEMINI.md",
    ".github/copilot-instructions.md",
    ".github/instructions",
    ".cursor/rules",
)
# Read wherever they are in the tree too: a monorepo's packages keep their own.
AGENT_FILE_NAMES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")
# .agents/skills: Codex's documented project skills (.codex/skills is read too, as before).
AGENT_SKILL_DIRS = (".claude/skills", ".github/skills", ".codex/skills", ".agents/skills")
# A developer's own instructions for a project (Claude Code's CLAUDE.local.md, kept out of git):
# indexed into the local store only, never into a team store nor published to one.
PERSONAL_AGENT_FILES = ("CLAUDE.local.md",)
REPO_MEMORY_DIRS = ("docs/decisions", "docs/adr", ".captain-memo/memory", *AGENT_MEMORY_FILES)
REPO_SKILL_DIRS = (".captain-memo/skills", *AGENT_SKILL_DIRS)


def personal_agent_file(stored_path: str | None) -> bool:
    """Whether a memory's file is one a developer keeps to themselves (``CLAUDE.local.md``)."""
    return stored_path is not None and Path(stored_path).name in PERSONAL_AGENT_FILES


# .mdc: a Cursor rule, Markdown with front matter (description, globs, alwaysApply).
NOTE_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd", ".mdx", ".mdc", ".txt", ".rst", ".adoc", ".asciidoc")
SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class SourceSettings:
    personal_note_dirs: tuple[Path, ...] = ()
    personal_skill_dirs: tuple[Path, ...] = ()
    repo_note_dirs: tuple[str, ...] = REPO_MEMORY_DIRS
    repo_skill_dirs: tuple[str, ...] = REPO_SKILL_DIRS
    # A note bigger than this is skipped: 1 MiB of Markdown is ~900 chunks, far past a note.
    max_file_bytes: int = 1 << 20
    # First `index --git` in a repository: only the newest commits, oldest first.
    git_max_commits: int = 5000
    # A commit message longer than this is cut; generated changelogs otherwise swamp a recall.
    git_max_message_chars: int = 4000
    auto_supersede: bool = True
    auto_supersede_cosine: float = 0.93


def _split_dirs(raw: str | None) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """(personal folders, repository-relative folders) from a colon-separated list."""
    personal: list[Path] = []
    relative: list[str] = []
    for entry in (raw or "").split(os.pathsep):
        entry = entry.strip()
        if not entry:
            continue
        if entry.startswith("~") or os.path.isabs(entry):
            personal.append(Path(entry).expanduser().resolve())
        else:
            relative.append(Path(entry).as_posix().strip("/"))
    return tuple(dict.fromkeys(personal)), tuple(dict.fromkeys(relative))


def source_settings(env: Mapping[str, str] | None = None) -> SourceSettings:
    """The settings read from ``env`` (config.py reads them; the process environment by default)."""
    from dataclasses import asdict

    from captain_memo.config import source_folders, source_values

    note_dirs, skill_dirs = source_folders(env)
    notes, repo_notes = _split_dirs(note_dirs)
    skills, repo_skills = _split_dirs(skill_dirs)
    return SourceSettings(
        personal_note_dirs=notes,
        personal_skill_dirs=skills,
        repo_note_dirs=tuple(dict.fromkeys(REPO_MEMORY_DIRS + repo_notes)),
        repo_skill_dirs=tuple(dict.fromkeys(REPO_SKILL_DIRS + repo_skills)),
        **source_values(asdict(SourceSettings()), env),  # type: ignore[arg-type]
    )
