"""reStructuredText notes into sections, like Markdown's ``#``/``##``.

A title is a line of text underlined (and optionally overlined) by one punctuation character
repeated at least as long as the text. reStructuredText gives adornments no fixed levels: the
first style met is level 1 (the document title), the next new one level 2 (a section), and so on,
with an overline making a style of its own (``===`` over and under differs from ``===`` under).

Opaque blocks, never split and never read for titles:

- a literal block: the indented text after a paragraph ending in ``::``;
- explicit markup: a directive (``.. code-block:: python``), a comment, a target or a footnote,
  with everything indented under it, blank lines included.

An indented block is opaque as a whole: a title cannot sit inside one.
"""

from __future__ import annotations

import re
from functools import partial

from captain_memo.sources.markdown import Block, Paragraph, parse_markup

ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")  # one ASCII punctuation character, repeated
EXPLICIT = re.compile(r"^(\s*)\.\.(\s|$)")
MIN_ADORNMENT = 2


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _adornment(line: str, text: str) -> str | None:
    """The adornment character when ``line`` underlines (or overlines) ``text``."""
    match = ADORNMENT.match(line)
    width = len(line.rstrip())
    if match and width >= MIN_ADORNMENT and width >= len(text.strip()):
        return match.group(1)
    return None


def _title_at(lines: list[str], i: int) -> tuple[tuple[str, bool], str, int] | None:
    """((character, overlined), title, lines taken) when a title starts at line ``i``."""
    line = lines[i]
    if i + 2 < len(lines) and ADORNMENT.match(line) and lines[i + 1].strip() and not ADORNMENT.match(lines[i + 1]):
        char = _adornment(line, lines[i + 1])
        if char and lines[i + 2].rstrip() == line.rstrip():
            return (char, True), lines[i + 1].strip(), 3
    if i + 1 < len(lines) and line.strip() and _indent(line) == 0 and not ADORNMENT.match(line):
        char = _adornment(lines[i + 1], line)
        if char and (i + 2 >= len(lines) or not lines[i + 2].strip() or not ADORNMENT.match(lines[i + 2])):
            return (char, False), line.strip(), 2
    return None


def _indented_end(lines: list[str], i: int, indent: int) -> int:
    """The index after the last line of the block indented deeper than ``indent`` starting at ``i``."""
    end = i
    j = i
    while j < len(lines):
        if lines[j].strip():
            if _indent(lines[j]) <= indent:
                break
            end = j + 1
        j += 1
    return end


def blocks(lines: list[str]) -> list[Block]:
    found: list[Block] = []
    styles: list[tuple[str, bool]] = []
    paragraph = Paragraph(found)
    i = 0

    def opaque(first: int, end: int) -> None:
        found.append(Block(first + 1, end, "\n".join(lines[first:end]).strip("\n"), opaque=True))

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            literal = paragraph.lines and paragraph.lines[-1].rstrip().endswith("::")
            indent = _indent(paragraph.lines[0]) if paragraph.lines else 0
            paragraph.close()
            if literal:
                end = _indented_end(lines, i, indent)
                if end > i:
                    first = next(j for j in range(i, end) if lines[j].strip())
                    opaque(first, end)
                    i = end
                    continue
            i += 1
            continue
        explicit = EXPLICIT.match(line)
        if explicit and not paragraph.lines:
            end = max(_indented_end(lines, i + 1, _indent(line)), i + 1)
            opaque(i, end)
            i = end
            continue
        title = _title_at(lines, i) if not paragraph.lines else None
        if title is not None:
            style, text, taken = title
            if style not in styles:
                styles.append(style)
            found.append(Block(i + 1, i + taken, text, heading=(styles.index(style) + 1, text)))
            i += taken
            continue
        if not paragraph.lines and _indent(line) > 0:  # a block quote or a definition's body: kept whole
            end = _indented_end(lines, i, _indent(line) - 1)
            opaque(i, end)
            i = end
            continue
        paragraph.add(i, line)
        i += 1
    paragraph.close()
    return found


# parse(text, fallback_title, max_chars=...) -> Note: a reStructuredText file's sections and their chunks.
parse = partial(parse_markup, blocks_of=blocks)
