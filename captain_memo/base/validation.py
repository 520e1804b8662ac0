"""Checks on text before it is stored: what cannot be stored faithfully is refused, saying why."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from captain_memo.base.fields import LATEST_TIME, MAX_BODY_CHARS, MAX_FIELD_CHARS, MAX_LINE, MAX_TITLE_CHARS
from captain_memo.base.kinds import KINDS
from captain_memo.errors import InputError

__all__ = ["MAX_BODY_CHARS", "MAX_FIELD_CHARS", "MAX_TITLE_CHARS"]
PRIVATE_TAG = re.compile(r"<(/?)private>", re.IGNORECASE)


def escaped_bytes(text: str) -> str:
    """Bytes that are not UTF-8, as Python reads them from a file name, an argument or a terminal
    (``surrogateescape``: byte 0xE9 as U+DCE9), written as ``\\xe9`` escapes: the form stored for
    such a path by the git history, which SQLite's text can hold: a question holding a file's name
    as the file system gives it finds that path. Other text is returned as is."""
    if not isinstance(text, str):
        return text  # refused by checked_text, naming the field
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte makes: not from a file system
            return text
    return text


def checked_text(name: str, value: str, limit: int) -> str:
    """``value`` unchanged if SQLite can store and return it byte-equal, else InputError."""
    if not isinstance(value, str):
        raise InputError(f"{name} must be text, not {type(value).__name__}")
    if len(value) > limit:
        raise InputError(f"{name} is {len(value):,} characters; the limit is {limit:,}")
    if "\x00" in value:
        raise InputError(f"{name} contains a NUL character at position {value.index(chr(0))}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"{name} contains an unpaired surrogate at position {exc.start}; it is not valid text"
        ) from None
    return value


def unix_newlines(text: str) -> str:
    """CRLF line ends as LF: text from Windows files, commit messages or a pasted selection otherwise
    shows ``^M`` in every preview. A lone CR is not a line end anywhere now; it is kept, and shown
    escaped like any control character."""
    return text.replace("\r\n", "\n") if "\r\n" in text else text


def private_spans(text: str) -> list[tuple[int, int]]:
    """Where ``<private>…</private>`` spans start and end, tags included, erring on hiding more.

    Tags nest: a span runs from an opening tag to the closing tag that brings the count back to
    zero, so ``<private>A <private>B</private> C</private>`` hides C too. An opening tag never
    closed hides the rest of the text. A closing tag never opened extends the span before it back
    over the text between them (a nested opening tag was probably lost), or, with no span before
    it, hides everything before it (a span cut in two by a chunk boundary).
    """
    spans: list[tuple[int, int]] = []
    depth = start = 0
    for tag in PRIVATE_TAG.finditer(text):
        if not tag.group(1):
            start = tag.start() if depth == 0 else start
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                spans.append((start, tag.end()))
        else:
            spans.append((spans.pop()[0] if spans else 0, tag.end()))
    if depth:
        spans.append((start, len(text)))
    return spans


def without_private(text: str, keep_lines: bool = False) -> str:
    """``text`` without its private spans: they are never stored. ``keep_lines`` leaves each span's
    line breaks in its place, so the line numbers of what follows stay true."""
    parts, last = [], 0
    for start, end in private_spans(text):
        parts += [text[last:start], "\n" * text.count("\n", start, end) if keep_lines else ""]
        last = end
    return "".join(parts) + text[last:]


def checked_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InputError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    return kind


def checked_optional(name: str, value: str | None) -> str | None:
    return None if value is None else checked_text(name, value, MAX_FIELD_CHARS)


def checked_time(name: str, value) -> float | None:
    """Seconds since 1970 as stored (a number from 1970 to the year 9999), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= LATEST_TIME:
        raise InputError(f"{name} must be seconds since 1970 (a number), not {_what(value)}")
    return float(value)


def checked_line(name: str, value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LINE:
        raise InputError(f"{name} must be a line number from 1, not {_what(value)}")
    return value


def _what(value) -> str:
    return repr(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def parse_date(text: str | None) -> float | None:
    """ISO date or datetime (naive means UTC) to epoch seconds."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"cannot read the date {text!r}; use ISO form like 2026-03-01 or 2026-03-01T09:30") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()
