"""Text for a terminal: control characters shown as escapes, never sent raw.

A stored title, body, branch or file name can hold escape sequences (OSC 52 writes the user's
clipboard, CSI moves the cursor) or line breaks that forge a line of our own output ("indexed
..."). Human output passes one-line fields through ``one_line`` and text blocks through ``block``;
``EscapedStream`` does the latter for everything the CLI writes, as a net under both.

Every escape is one JSON also uses (``\\n``, ``\\r``, ``\\t``, ``\\u001b``), so the net leaves
``--json`` output valid and decoding to the same strings.

Translation tables rather than regular expressions: this module is on the command line's warm
path, where importing ``re`` (with ``enum``) costs about as much as the rest of the command.
"""

from __future__ import annotations

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ANY_CONTROL = {code: _SHORT.get(chr(code)) or f"\\u{code:04x}" for code in _CONTROLS}
# A block keeps its line breaks and tabs.
_BLOCK_CONTROL = {code: escape for code, escape in _ANY_CONTROL.items() if chr(code) not in "\n\t"}


def one_line(text: str | None) -> str:
    """A field printed on one line (title, path, branch): every control escaped, line breaks too."""
    return (text or "").translate(_ANY_CONTROL)


def block(text: str | None) -> str:
    """Text printed as lines (a memory's body): line breaks and tabs kept, other controls escaped;
    a line ending written on Windows is a line ending."""
    return (text or "").replace("\r\n", "\n").translate(_BLOCK_CONTROL)


class EscapedStream:
    """A text stream that passes everything written through ``block``."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(block(text))
        return len(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)
