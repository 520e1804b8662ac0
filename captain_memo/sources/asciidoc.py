"""AsciiDoc notes into sections, like Markdown's ``#``/``##``.

``= Title`` is level 1 (the document title), ``== Section`` level 2, ``===`` and deeper are
subsections; Markdown-style ``#`` titles, which AsciiDoc also accepts, count the same. A delimited
block (``----`` listing, ``....`` literal, ``====`` example, ``****`` sidebar, ``____`` quote,
``++++`` passthrough, ``////`` comment, ``|===`` table) is opaque: never split, and a ``==`` line
inside it is not a title. An unclosed block runs to the end of the file.
"""

from __future__ import annotations

import re
from functools import partial

from captain_memo.sources.markdown import Block, Paragraph, parse_markup

TITLE = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*?)[ \t]*$")
DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|\|={3,})[ \t]*$")


def blocks(lines: list[str]) -> list[Block]:
    found: list[Block] = []
    paragraph = Paragraph(found)
    i = 0
    while i < len(lines):
        line = lines[i]
        delimiter = DELIMITER.match(line)
        if delimiter:
            paragraph.close()
            end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == line.rstrip()), len(lines) - 1)
            found.append(Block(i + 1, end + 1, "\n".join(lines[i: end + 1]), opaque=True))
            i = end + 1
            continue
        title = TITLE.match(line)
        if title and not paragraph.lines:
            found.append(Block(i + 1, i + 1, title.group(2), heading=(len(title.group(1)), title.group(2))))
        elif not line.strip():
            paragraph.close()
        else:
            paragraph.add(i, line)
        i += 1
    paragraph.close()
    return found


# parse(text, fallback_title, max_chars=...) -> Note: an AsciiDoc file's sections and their chunks.
parse = partial(parse_markup, blocks_of=blocks)
