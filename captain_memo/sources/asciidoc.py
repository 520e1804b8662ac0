"""AsciiDoc notes into sections, like Markdown's ``#``/``##``.

``= Title`` is level 1 (the document title), ``== Section`` level 2, ``===`` and deeper are
subsections; Markdown-style ``#`` titles, which AsciiDoc also accepts, count the same. A delimited
block (``----`` listing, ``....`` literal, ``====`` example, ``****`` sidebar, ``____`` quote,
``++++`` passthrough, ``////`` comment, ``|===`` table) is opaque: never split, and a ``==`` line
inside it is not a title. An unclosed block runs to the end of the file.
"""

from __future__ import annotations

import re

from captain_memo.chunking import MAX_CHUNK_CHARS
from captain_memo.sources.markdown import Block, FrontMatter, Note, sectioned

TITLE = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*?)[ \t]*$")
DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|\|={3,})[ \t]*$")


def blocks(lines: list[str]) -> list[Block]:
    found: list[Block] = []
    paragraph: list[str] = []
    start = 0
    i = 0

    def close() -> None:
        nonlocal paragraph
        if paragraph:
            found.append(Block(start + 1, start + len(paragraph), "\n".join(paragraph)))
        paragraph = []

    while i < len(lines):
        line = lines[i]
        delimiter = DELIMITER.match(line)
        if delimiter:
            close()
            end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == line.rstrip()), len(lines) - 1)
            found.append(Block(i + 1, end + 1, "\n".join(lines[i: end + 1]), opaque=True))
            i = end + 1
            continue
        title = TITLE.match(line)
        if title and not paragraph:
            found.append(Block(i + 1, i + 1, title.group(2), heading=(len(title.group(1)), title.group(2))))
        elif not line.strip():
            close()
        else:
            if not paragraph:
                start = i
            paragraph.append(line)
        i += 1
    close()
    return found


def parse(text: str, fallback_title: str, max_chars: int = MAX_CHUNK_CHARS) -> Note:
    """Split an AsciiDoc file's text into its sections and their chunks."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return sectioned(lines, 0, FrontMatter(), blocks(lines), fallback_title, max_chars)
