"""Whether an agent's rule applies to the files in play: plain functions over strings.

A rule's scope (records.RuleScope) is read from its front matter by the sources
(sources/agent_rules.py); the prompt hook keeps a scoped rule only when a file the prompt names, or
a file the agent's event names, falls inside it (doc/sources.md, "Rules and where they apply").

Globs are the agents' own (Cursor's ``globs``, Copilot's ``applyTo``, Claude Code's ``paths``), read
as .gitignore-style globs over paths relative to the repository: ``*`` and ``?`` stop at ``/``,
``**`` spans folders (``web/**/*.ts`` holds ``web/a.ts`` and ``web/x/y/a.ts``), ``[ab]`` is one of
its characters, ``{ts,tsx}`` one of its words; a glob without ``/`` matches a file's name at any
depth (``*.ts`` is ``**/*.ts``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from captain_memo.base.touches import FILE_SUFFIXES, clean
from captain_memo.records import RuleScope

# Suffixes of files a prompt may name besides the code and text that touches.py knows.
MORE_SUFFIXES = frozenset(
    "vue svelte astro scss sass less swift cs fs m mm scala ex exs erl hs ml dart tf proto graphql "
    "mdc xml gradle cmake mk dockerfile".split()
)
# A token of a prompt that may be a path: letters, digits and the characters paths hold.
PATH_TOKEN = re.compile(r"[\w@~+./-]+")
MAX_PATH_CHARS = 1_024
# Where agents' events name files: Cursor's attachments and edits, a tool call's input.
EVENT_FILE_FIELDS = ("file_path", "filePath", "path")


def applies(scope: RuleScope | None, files: Sequence[str]) -> bool:
    """Whether a memory with this scope belongs beside a prompt about ``files`` (paths relative to
    the repository, or bare file names): no scope and ``always`` do; globs when one holds a file."""
    if scope is None or scope.always:
        return True
    return any(glob_holds(glob, file) for glob in scope.globs for file in files)


def glob_holds(glob: str, path: str) -> bool:
    """Whether ``glob`` matches ``path``; a bare file name (no folder known) is matched by the
    glob's last part, so ``app.ts`` named alone is inside ``web/**/*.ts``."""
    pattern = glob.strip().removeprefix("./").lstrip("/")
    if not pattern or not path:
        return False
    if "/" not in path:
        pattern = pattern.rsplit("/", 1)[-1]
    elif "/" not in pattern.rstrip("/"):
        pattern = "**/" + pattern
    if pattern.endswith("/"):
        pattern += "**"  # a folder: everything in it
    return any(_holds(_tokens(word), path) for word in _expanded(pattern))


# Matched token by token over the set of path positions reached, never by backtracking: a regular
# expression of `*a*a*a*a*a*a*a*a*a*b` took minutes on a 200-character name (and a rule's globs are
# whatever a teammate wrote). O(pattern length x path length).
LITERAL, ONE, SET, STAR, FOLDERS, ANYTHING = range(6)


def _tokens(glob: str) -> list[tuple]:
    tokens: list[tuple] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**", i):
            while glob.startswith("*", i):
                i += 1
            folders = glob.startswith("/", i)
            i += folders
            if not tokens or tokens[-1][0] not in (FOLDERS, ANYTHING):  # repeated ** say no more
                tokens.append((FOLDERS,) if folders else (ANYTHING,))
        elif glob[i] == "*":
            tokens.append((STAR,))
            i += 1
        elif glob[i] == "?":
            tokens.append((ONE,))
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            tokens.append((SET, *_character_set(glob[i + 1 : end])))
            i = end + 1
        else:
            tokens.append((LITERAL, glob[i]))
            i += 1
    return tokens


def _character_set(inner: str) -> tuple[bool, tuple[tuple[str, str], ...]]:
    """``!a-c_`` -> (negated, ((a, c), (_, _)))."""
    negated = inner[0] in "!^"
    inner = inner[1:] if negated else inner
    ranges, i = [], 0
    while i < len(inner):
        if i + 2 < len(inner) and inner[i + 1] == "-":
            ranges.append((inner[i], inner[i + 2]))
            i += 3
        else:
            ranges.append((inner[i], inner[i]))
            i += 1
    return negated, tuple(ranges)


def _holds(tokens: list[tuple], path: str) -> bool:
    n = len(path)
    reached = bytearray(n + 1)
    reached[0] = 1
    for token in tokens:
        kind = token[0]
        after = bytearray(n + 1)
        active = False
        for q in range(n + 1):
            if kind == STAR:  # any run of characters within one folder's name
                active = active or bool(reached[q])
                after[q] = active
                active = active and q < n and path[q] != "/"
            elif kind == FOLDERS:  # nothing, or anything ending in /
                after[q] = reached[q] or (active and path[q - 1] == "/")
                active = active or bool(reached[q])
            elif kind == ANYTHING:
                active = active or bool(reached[q])
                after[q] = active
            elif q and reached[q - 1] and _one(token, path[q - 1]):
                after[q] = 1
        reached = after
        if not any(reached):
            return False
    return bool(reached[n])


def _one(token: tuple, char: str) -> bool:
    kind = token[0]
    if kind == LITERAL:
        return char == token[1]
    if char == "/":
        return False
    if kind == ONE:
        return True
    negated, ranges = token[1], token[2]
    return any(low <= char <= high for low, high in ranges) != negated


# A glob's {a,b} alternatives are tried one by one; past this many the rest are not.
MAX_ALTERNATIVES = 64


def _expanded(glob: str) -> list[str]:
    """``src/*.{ts,tsx}`` -> [src/*.ts, src/*.tsx] (nested braces too), at most MAX_ALTERNATIVES."""
    start = glob.find("{")
    end = _closing_brace(glob, start) if start != -1 else -1
    if end == -1:
        return [glob]
    head, tail = glob[:start], glob[end + 1 :]
    found: list[str] = []
    for word in _split_words(glob[start + 1 : end]):
        for rest in _expanded(head + word + tail):
            if len(found) >= MAX_ALTERNATIVES:
                return found
            found.append(rest)
    return found


def _closing_brace(glob: str, start: int) -> int:
    depth = 0
    for i in range(start, len(glob)):
        depth += {"{": 1, "}": -1}.get(glob[i], 0)
        if depth == 0:
            return i
    return -1


def _split_words(inner: str) -> list[str]:
    """``ts,{js,jsx}`` -> [ts, {js,jsx}]: commas at the top level only."""
    words, depth, start = [], 0, 0
    for i, char in enumerate(inner):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            words.append(inner[start:i])
            start = i + 1
    return [*words, inner[start:]]


# -- the files in play --------------------------------------------------------------------------


def files_in_play(prompt: str, event: dict, root: str | None) -> tuple[str, ...]:
    """The files a prompt is about: those it names (``src/price.py``, ``price.py``) and those the
    agent's event names (Cursor's ``attachments``, a ``file_path``), relative to ``root`` when
    they lie in it."""
    named = [*files_named(prompt), *event_files(event)]
    return tuple(dict.fromkeys(relative(path, root) for path in named))


def files_named(prompt: str) -> list[str]:
    """Tokens of a prompt that name a file: a known suffix (``price.py``, ``web/app.tsx``)."""
    found = []
    for token in PATH_TOKEN.findall(prompt):
        if len(token) > MAX_PATH_CHARS:
            continue  # a pasted blob, not a path
        token = clean(token).rstrip(".,:;")
        suffix = PurePosixPath(token).suffix.lstrip(".").casefold()
        if suffix and (suffix in FILE_SUFFIXES or suffix in MORE_SUFFIXES):
            found.append(token)
    return found


def event_files(event: dict) -> list[str]:
    """Paths an agent's event names: ``file_path`` (and its kin) at its top, in ``tool_input``, and
    in each of Cursor's ``attachments``."""
    places: list[object] = [event, event.get("tool_input")]
    attachments = event.get("attachments")
    if isinstance(attachments, list):
        places += attachments
    return [
        value
        for place in places
        if isinstance(place, dict)
        for key in EVENT_FILE_FIELDS
        if isinstance(value := place.get(key), str) and value.strip()
    ]


def relative(path: str, root: str | None) -> str:
    """``path`` relative to the repository (``/repo/web/a.ts`` -> ``web/a.ts``), as globs read it."""
    path = path.strip().replace("\\", "/")
    if root and os.path.isabs(path):
        rel = os.path.relpath(path, root)
        if not rel.startswith(".."):
            return PurePosixPath(rel).as_posix()
    return path.removeprefix("./")


def working_tree(path: Path) -> Path | None:
    """The working tree holding ``path``, found by looking for ``.git`` (no git process needed)."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def hits_in_scope(hits: Iterable[dict], prompt: str, event: dict, folder: str) -> list[dict]:
    """The hits (as recall's JSON gives them) whose rule applies to the files in play of a prompt
    asked in ``folder``; a hit that is no scoped rule always stays."""
    kept: list[dict] = []
    files: tuple[str, ...] | None = None
    for hit in hits:
        scope = scope_of(hit.get("source") or {})
        if scope is not None and not scope.always and files is None:
            root = working_tree(Path(folder).resolve())
            files = files_in_play(prompt, event, str(root) if root else folder)
        if applies(scope, files or ()):
            kept.append(hit)
    return kept


def scope_of(source: dict) -> RuleScope | None:
    """The scope in a source's JSON (``rule_scope``), None for a memory that is no scoped rule."""
    data = source.get("rule_scope")
    if not isinstance(data, dict):
        return None
    return RuleScope(bool(data.get("always")), tuple(str(g) for g in data.get("globs") or ()))
