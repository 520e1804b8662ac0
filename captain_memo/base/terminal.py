"""Text for a terminal: control characters shown as escapes, never sent raw.

A stored title, body, branch or file name can hold escape sequences (OSC 52 writes the user's
clipboard, CSI moves the cursor) or line breaks that forge a line of our own output ("indexed
..."). Human output passes one-line fields through ``one_line`` and text blocks through ``block``;
``EscapedStream`` does the latter for everything the CLI writes, as a net under both.

Every escape is one JSON also uses (``\\n``, ``\\r``, ``\\t``, ``\\u001b``), so the net leaves
``--json`` output valid and decoding to the same strings.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators; a block keeps \n and \t.
_ANY_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_BLOCK_CONTROL = re.compile("\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"  # a line ending written on Windows is a line ending
    return _SHORT.get(char) or f"\\u{ord(char):04x}"


def one_line(text: str | None) -> str:
    """A field printed on one line (title, path, branch): every control escaped, line breaks too."""
    return _ANY_CONTROL.sub(_escape, text or "")


def block(text: str | None) -> str:
    """Text printed as lines (a memory's body): line breaks and tabs kept, other controls escaped."""
    return _BLOCK_CONTROL.sub(_escape, text or "")


class EscapedStream:
    """A text stream that passes everything written through ``block``."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(block(text))
        return len(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)
