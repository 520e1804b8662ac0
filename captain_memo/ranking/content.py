"""Is a chunk source code? Read from its lines alone, in any common language.

Why ranking needs to know (ranking/union.py): a plain-English question put to source code shares
words with it by accident (``file``, ``list``, ``img`` repeated in a body), so bm25 ranks such code
high while the embedding still reads what the code does. On two sets of functions searched by
English descriptions (cosqa, and functions of Python's standard library searched by their own
docstring summaries with the docstring removed) the keyword leg scored 0.38 nDCG@10 against the
vector leg's 0.53-0.60, while on prose the two legs are close (doc/eval.md).

The test is deliberately strict, because a prose note taken for code would lose keyword evidence
it needs: at least two code lines, and at least as many code lines as other lines, not counting
blank lines, comments and docstrings. Each rule for a code line is written so that a sentence
does not meet it (``is_code_line``); list items and stack traces are prose about code. Code quoted
in a document (a Markdown fence, a reStructuredText literal block or code directive) makes the
chunk a note with an example, however long the example: in pytest's changelog such a note, mostly
code, was lifted over the fragment a query asked for. Measured on the evaluation corpora: 98.2% of
cosqa's functions and 98.3% of the standard library set are code; no scifact abstract, no pytest
changelog fragment, no commit message of this repository and no chunk of its doc/ is.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Words that begin a line of code and rarely a line of prose. "for", "if", "with" begin sentences
# too, so they count only before a block's colon (BLOCK); "let", "var", "const" only before a
# declaration, "import" and "package" only before a module's name.
_STARTS = (
    "def|class|return|elif|except|finally|raise|yield|await|async|function|fn|pub|func|public|private|"
    "protected|static|void|struct|impl|namespace|#include|#define|#import|local\\s+function"
)
START = re.compile(rf"^({_STARTS})\b(?!\s*$)")
DECLARATION = re.compile(r"^(let|var|const|val|local)\s+(mut\s+)?(\{[^}]*\}|\[[^\]]*\]|\w+)\s*(=|:|;|$)")
MODULE = re.compile(r"^(import\s+[\w.*]+(\s+as\s+\w+)?(\s*,\s*[\w.]+)*|from\s+[\w.]+\s+import\b.*|package\s+[\w.]+);?$")
# A block opened by a lower-case keyword and a colon ("else:", "if n is None:", "for x in xs:");
# "Steps:", "User:" or "Decision:" are labels of prose.
BLOCK = re.compile(r"^(if|elif|else|for|while|with|try|except|finally|case|default|switch)\b[^,;]*:$")
ASSIGN = re.compile(r"^[\w.\[\]'\"]+(\s*,\s*[\w.\[\]]+)*\s*(=|\+=|-=|\*=|/=|\|=|:=|<-)\s*([^=\s].*)$")
# What an assignment's right side holds when it is code rather than "Timeout = 30 seconds".
EXPRESSION = re.compile(r"[()\[\]{}\"'+*/%<>.-]")
CALL = re.compile(r"^[\w.]+\(.*\)\s*;?$")
# The end of a call, literal or block spread over lines: ")", "]);", "}", Lua's and Ruby's "end".
CLOSING = re.compile(r"^([)\]}]+[,;:)]*|end)$")
# A statement ending in ";" holds code punctuation or is a word or two ("break;", "use std::io;"):
# a list of items ending in ";" is prose.
STATEMENT_MARKS = re.compile(r"[()=\[\]]")
COMMENT = re.compile(r"^(#(?!include|define|import)|//|/\*|\*/|--|<!--)")
# A list item ("- ", "* ", "1. ") or a line of a stack trace is prose about code, never code.
PROSE = re.compile(r"^([-*+]\s|\d+[.)]\s|Traceback \(|File \"|at [\w$.<>]+\()")
DOCSTRING_QUOTES = ('"""', "'''")
# Markup that quotes code inside a document: a Markdown fence, a reStructuredText literal block
# ("::" ending a line) or code directive. A chunk holding it is a note with an example, not code.
QUOTED_CODE = ("```", "~~~", ".. code-block::", ".. code::", ".. sourcecode::")
# Texts longer than this are judged by their beginning: chunks are far shorter, and the test stays
# cheap for the few candidates of a recall that are not.
LOOK_AT = 20_000


def is_code_line(line: str) -> bool:
    """Whether one line (stripped, not blank, not a comment) reads as a line of code."""
    if PROSE.match(line):
        return False
    if START.match(line) or DECLARATION.match(line) or MODULE.match(line) or BLOCK.match(line):
        return True
    if CALL.match(line) or CLOSING.match(line) or line.endswith(("{", "}", "=>", "->")):
        return True
    if line.endswith(";"):
        return STATEMENT_MARKS.search(line) is not None or len(line.split()) <= 2
    assigned = ASSIGN.match(line)
    return assigned is not None and (" " not in assigned[3] or EXPRESSION.search(assigned[3]) is not None)


@lru_cache(maxsize=8192)
def is_source_code(text: str) -> bool:
    code = counted = 0
    in_docstring = False
    for raw in text[:LOOK_AT].splitlines():
        line = raw.strip()
        if not line:
            continue
        quotes = sum(line.count(q) for q in DOCSTRING_QUOTES)
        if in_docstring or (quotes and line.startswith(DOCSTRING_QUOTES)):
            if quotes % 2:
                in_docstring = not in_docstring
            continue
        if COMMENT.match(line):
            continue
        if line.startswith(QUOTED_CODE) or line.endswith("::"):
            return False
        counted += 1
        code += is_code_line(line)
    return code >= 2 and 2 * code >= counted
