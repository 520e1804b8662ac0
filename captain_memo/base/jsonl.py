"""Reading JSON-lines files: one object a line, blank lines ignored, errors naming file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from captain_memo.errors import InputError


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def parse_value(line: str):
    """One line's value; ValueError saying why it is not JSON. ``NaN`` and ``Infinity``, which
    Python's reader accepts, are refused: they would be stored and later printed as invalid JSON."""
    try:
        return json.loads(line, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(exc.msg) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None


def numbered_values(lines: Iterable[str]) -> Iterator[tuple[int, object, str | None]]:
    """(line number, value, None) for each non-blank line, or (line number, None, why it is not JSON)."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield number, parse_value(line), None
        except ValueError as exc:
            yield number, None, f"not valid JSON ({exc})"


def parse_lines(lines: Iterable[str], name: str) -> Iterator[tuple[str, object]]:
    """(``name:line``, parsed value) for every non-blank line; InputError on one that is not JSON."""
    for number, value, error in numbered_values(lines):
        if error:
            raise InputError(f"{name}:{number}: {error}")
        yield f"{name}:{number}", value


# One record holds at most a memory's text (1,000,000 characters, up to 4 bytes each in UTF-8)
# plus its fields; a longer line is no record, and reading it whole could exhaust memory.
MAX_LINE_BYTES = 4 << 20


def capped_lines(stream: BinaryIO, name: str, max_bytes: int | None = None) -> Iterator[str]:
    """The stream's lines as text, each read with a cap (default ``MAX_LINE_BYTES``): a longer line
    (``/dev/zero``, a binary file) is an InputError naming it, not an unbounded read."""
    max_bytes = max_bytes or MAX_LINE_BYTES
    for number, raw in enumerate(iter(lambda: stream.readline(max_bytes + 1), b""), 1):
        if len(raw) > max_bytes:
            raise InputError(f"{name}:{number}: line longer than {max_bytes:,} bytes; not a JSON-lines file?")
        try:
            yield raw.decode("utf-8").removesuffix("\n")
        except UnicodeDecodeError as exc:
            raise InputError(f"{name}:{number}: not UTF-8 (byte {exc.start + 1})") from None
