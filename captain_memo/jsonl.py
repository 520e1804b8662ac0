"""Reading JSON-lines files: one object a line, blank lines ignored, errors naming file and line."""

from __future__ import annotations

import json
from typing import Iterable, Iterator

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
