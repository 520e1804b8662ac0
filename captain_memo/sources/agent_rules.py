"""Where an agent's rule applies, read from its front matter by the agent's own convention.

- Cursor, ``.cursor/rules/*.mdc``: ``alwaysApply: true`` is always; else ``globs`` (a list, or a
  comma-separated string) names the files it is attached to; neither: the agent picks it by its
  description, so it has no scope (recall decides).
- GitHub Copilot, ``.github/instructions/*.instructions.md``: ``applyTo`` (comma-separated globs).
- Claude Code, ``.claude/rules/*.md``: ``paths`` (a list or a string of globs); a rule without
  ``paths`` is loaded in every session, so it is always.

A glob that matches every file (``**``, ``**/*``, ``*``) makes the rule always apply. Any other file
has no scope, whatever its front matter holds (a note's ``paths:`` means nothing here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from captain_memo.records import RuleScope

CURSOR_RULES = ".cursor/rules/"
COPILOT_INSTRUCTIONS = ".github/instructions/"
CLAUDE_RULES = ".claude/rules/"
EVERY_FILE = {"**", "**/*", "*", "/**", "./**"}
# A rule holds a few globs; past this many the rest are dropped (a generated list is no scope).
MAX_GLOBS = 64
MAX_GLOB_CHARS = 512


def rule_scope(stored_path: str, front: Mapping[str, object]) -> RuleScope | None:
    """The scope of the rule at ``stored_path`` (relative to its repository) from its front matter's
    keys (lower-cased); None when it is no rule of an agent, or a rule without a scope."""
    if stored_path.startswith(CURSOR_RULES) and stored_path.endswith(".mdc"):
        if _true(front.get("alwaysapply")):
            return RuleScope(always=True)
        return _scoped(front.get("globs"))
    if stored_path.startswith(COPILOT_INSTRUCTIONS) and stored_path.endswith(".instructions.md"):
        return _scoped(front.get("applyto"))
    if stored_path.startswith(CLAUDE_RULES):
        return _scoped(front.get("paths")) if "paths" in front else RuleScope(always=True)
    return None


def _true(value: object) -> bool:
    """YAML's true, or the simple reader's "true" (a block YAML refused: ``globs: *.ts``)."""
    return value is True or isinstance(value, str) and value.strip().lower() == "true"


def _scoped(value: object) -> RuleScope | None:
    globs = globs_of(value)
    if not globs:
        return None
    if any(glob in EVERY_FILE for glob in globs):
        return RuleScope(always=True)
    return RuleScope(globs=globs)


def globs_of(value: object) -> tuple[str, ...]:
    """Globs from a front matter value: a list of strings, or one string of comma-separated globs
    (commas inside ``{ts,tsx}`` belong to the glob)."""
    items = value if isinstance(value, list) else [value]
    found: list[str] = []
    for item in items:
        if isinstance(item, str):
            found += (part.strip().strip("'\"").strip() for part in _top_level_commas(item))
    usable = (g for g in found if g and len(g) <= MAX_GLOB_CHARS and "\n" not in g)
    return tuple(dict.fromkeys(usable))[:MAX_GLOBS]


def _top_level_commas(text: str) -> list[str]:
    return re.split(r",(?![^{]*\})", text)
