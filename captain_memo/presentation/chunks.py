"""Where in a memory a chunk sits, and which of its lines hold the query's words.

A long section (a 1,200-line "Deprecations and Removals") is one memory of many chunks; a hit is
one of them, and a person wants that one: its own heading path (every chunk of a file starts with
it, sources/markdown.py), its own lines, the lines that matched. The lines are found by reading
the chunk's text back in the memory's body, which holds the file's lines as they were indexed, so
no line numbers need storing per chunk. A chunk that cannot be found there (a body rewritten
since, a paragraph re-wrapped to fit the chunk size) keeps the memory's own lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from captain_memo.presentation.words import query_terms, term_pattern
from captain_memo.records import Memory

_WORDS = re.compile(r"\w")
FROM_A_FILE = "file"  # the origin of a memory indexed from a note file (sources/indexer.py)
SNIPPET_LINES = 2  # a snippet is this many lines of the chunk, the ones with most query words
SNIPPET_LINE_CHARS = 160  # a longer line is cut around its first match
PATH_SEPARATOR = " > "  # between a heading path's headings (sources/markdown.py)


@dataclass(frozen=True)
class ChunkPlace:
    """A chunk of a memory: its heading path, its text without that heading, and its lines in the
    memory's body (1-based; None when not found) and in the source file (None when it has none)."""

    title: str
    lines: tuple[str, ...]
    body_start: int | None = None
    body_end: int | None = None
    file_start: int | None = None
    file_end: int | None = None
    body_lines: tuple[int, ...] = ()  # the body line of each of ``lines`` (a blank one: the line before)

    def file_line(self, index: int) -> int | None:
        """The file line of the chunk's ``index``-th line (0-based), when the chunk was found."""
        if self.file_start is None or self.body_start is None or not self.body_lines:
            return None
        return self.file_start - self.body_start + self.body_lines[min(index, len(self.body_lines) - 1)]


def heading_of(memory: Memory, chunk_text: str) -> tuple[str, list[str]]:
    """The chunk's heading path (its first line when it extends the memory's title, as a section's
    chunks do) and the rest of its lines; the memory's title and every line otherwise."""
    lines = chunk_text.strip("\n").split("\n")
    title = memory.display_title
    first = lines[0].strip() if lines else ""
    if _is_heading(first, title):
        return first, lines[1:]
    return title, lines


def _is_heading(first: str, title: str) -> bool:
    """Whether a chunk's first line is its heading path: the title itself, the title's own heading
    path cut with an ellipsis, or a deeper path under it. A line that merely starts with the title
    is text: a one-line memory titled "Invoice rounding" whose line reads "Invoice rounding: rounds
    half-even to cents" (its chunk does not repeat the title, chunking.py), or an untitled one whose
    title is its line's first 80 characters; taken for a heading, its fact never reached the hook."""
    stem = title.rstrip("…").strip()
    if not first or not stem:
        return False
    if first == title or first.rstrip("…") == stem:
        return True
    return first.startswith(stem) and (title.endswith("…") or first.startswith(stem + PATH_SEPARATOR))


def place(memory: Memory, chunk_text: str) -> ChunkPlace:
    """Where ``chunk_text`` sits in ``memory``: its heading path and its lines. Only a memory read
    from a file (origin ``file``) holds that file's lines as its body; a note about some code keeps
    the lines it names."""
    title, lines = heading_of(memory, chunk_text)
    body = memory.body.split("\n")
    found = _find(lines, body)
    src = memory.source
    # Lines no file has (0, -5, an end before the start: written into a store by hand) are unknown.
    known = src.line_start is not None and 1 <= src.line_start <= (src.line_end or src.line_start)
    if not found or src.origin != FROM_A_FILE or not src.path or src.line_start is None or not known:
        start, end = (found[0], found[-1]) if found else (None, None)
        file_lines = (src.line_start, src.line_end) if known else (None, None)
        return ChunkPlace(title, tuple(lines), start, end, *file_lines)
    start, end = found[0], found[-1]
    span = (src.line_end or src.line_start) - src.line_start + 1
    # Text put before the file's lines (a skill's description) shifts the body, never the file.
    shift = max(0, len(body) - span)
    file_start, file_end = src.line_start + start - 1 - shift, src.line_start + end - 1 - shift
    return ChunkPlace(title, tuple(lines), start, end, file_start, file_end, found)


def _find(chunk_lines: list[str], body: list[str]) -> tuple[int, ...]:
    """The 1-based body line of each of the chunk's lines (a blank line takes the one before it),
    or () when the chunk's lines do not all follow one another in the body."""
    wanted = [(i, line.strip()) for i, line in enumerate(chunk_lines) if _WORDS.search(line)]
    if not wanted:
        return ()
    first = wanted[0][1]
    for start, line in enumerate(body):
        if first not in line:
            continue
        at = _follow(wanted, body, start)
        if at is not None:
            out, last = [], start + 1
            for i in range(len(chunk_lines)):
                last = at.get(i, last)
                out.append(last)
            return tuple(out)
    return ()


def _follow(wanted: list[tuple[int, str]], body: list[str], start: int) -> dict[int, int] | None:
    """Each wanted line matched to the body's next non-blank line, from ``start``; None on a miss.
    A paragraph cut to fit a chunk splits a body line in two, so two wanted lines may share one."""
    at: dict[int, int] = {}
    j, previous = start, ""
    for i, text in wanted:
        # The same body line again only when the line before was a part of it, not all of it.
        if not (at and previous != body[j].strip() and text in body[j]):
            if at:
                j += 1
            # Blank lines and lines of punctuation alone: a reStructuredText title's underline is in
            # the file but not in the chunk, which keeps the title's text.
            while j < len(body) and not _WORDS.search(body[j]):
                j += 1
            if j >= len(body) or text not in body[j]:
                return None
        at[i], previous = j + 1, text
    return at


@dataclass(frozen=True)
class Snippet:
    """The chunk's lines that hold most of the query's words, and where the first of them is."""

    text: str
    line_index: int  # 0-based, among the chunk's lines
    matched: tuple[str, ...]  # the query terms found in it


def snippet(lines: tuple[str, ...] | list[str], query: str, title: str = "", size: int = SNIPPET_LINES) -> Snippet:
    """The ``size`` neighbouring lines of text with the most distinct query terms (the chunk's first
    lines when none holds any: a hit found by meaning alone). A heading the title already shows and
    a line of punctuation (an underline, a rule) are not text."""
    rows = [(i, line.strip()) for i, line in enumerate(lines) if _is_text(line, title)]
    if not rows:
        return Snippet("", 0, ())
    pattern = term_pattern(query_terms(query))
    found = [set(m.lower() for m in pattern.findall(text)) if pattern else set() for _, text in rows]
    best, best_terms = 0, -1
    for k in range(len(rows)):
        terms = set().union(*found[k : k + size])
        # The most terms, then the window whose first line matches (a match leads the snippet).
        score = len(terms) * 2 + (1 if found[k] else 0)
        if score > best_terms:
            best, best_terms = k, score
    window = rows[best : best + size]
    text = "\n".join(_cut(line, pattern) for _, line in window)
    matched = tuple(sorted(set().union(*found[best : best + size])))
    return Snippet(text, window[0][0], matched)


def _is_text(line: str, title: str) -> bool:
    words = line.strip().strip("#=-~*^+`'\":. ").strip()
    return bool(re.search(r"\w", words)) and not (title and words in title)


def _cut(line: str, pattern, limit: int = SNIPPET_LINE_CHARS) -> str:
    """A line of at most ``limit`` characters, cut around its first match."""
    if len(line) <= limit:
        return line
    hit = pattern.search(line) if pattern else None
    start = max(0, (hit.start() if hit else 0) - limit // 3)
    end = start + limit
    # At spaces where there are some: a word cut in two reads as another word, and a token cut in
    # two is one no scan for credentials recognises (presentation/outbound.py).
    if start and (space := line.find(" ", start, start + limit // 3)) != -1:
        start = space + 1
    if end < len(line) and (space := line.rfind(" ", end - limit // 3, end)) != -1:
        end = space
    piece = line[start:end].strip()
    return ("… " if start else "") + piece + (" …" if end < len(line) else "")
