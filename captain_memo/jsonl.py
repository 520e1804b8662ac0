"""Reading JSON-lines files: one object a line, blank lines ignored, errors naming file and line."""

from __future__ import annotations

import json
from typing import Iterable, Iterator

from captain_memo.errors import InputError


def parse_lines(lines: Iterable[str], name: str) -> Iterator[tuple[str, object]]:
    """(``name:line``, parsed value) for every non-blank line; InputError on one that is not JSON."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg})") from None
