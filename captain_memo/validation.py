"""Checks on text before it is stored: what cannot be stored faithfully is refused, saying why."""

from __future__ import annotations

import re

from captain_memo.errors import InputError
from captain_memo.store.models import KINDS

MAX_BODY_CHARS = 1_000_000
MAX_TITLE_CHARS = 1_000
MAX_FIELD_CHARS = 4_096
# A span runs to its closing tag; an opening tag never closed hides the rest of the text, and a
# closing tag never opened hides what precedes it (a span cut in two by a chunk boundary).
PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)|\A(?:(?!<private>).)*?</private>", re.DOTALL | re.IGNORECASE)


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
        raise InputError(f"{name} contains an unpaired surrogate at position {exc.start}; it is not valid text") from None
    return value


def unix_newlines(text: str) -> str:
    """CRLF and lone CR line ends as LF: text from Windows files, commit messages or a pasted
    selection otherwise shows ``^M`` in every preview and splits words for the keyword leg."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def without_private(text: str) -> str:
    """Drop ``<private>…</private>`` spans: they are never stored."""
    return PRIVATE.sub("", text)


def checked_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InputError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    return kind


def checked_optional(name: str, value: str | None) -> str | None:
    return None if value is None else checked_text(name, value, MAX_FIELD_CHARS)
