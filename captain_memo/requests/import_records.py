"""JSON records to memories (`captain-memo import`): every field's type and range checked.

A record that cannot be stored faithfully is refused with its line number and the field at fault,
before anything is written; the caller decides whether the valid records go in without it or
nothing does (doc/json.md, "Importing").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from captain_memo.base import validation
from captain_memo.base.jsonl import numbered_values
from captain_memo.errors import InputError
from captain_memo.records import KINDS, NewMemory, Source

# Epoch seconds from 1970 to the end of year 9999: what a date can be written as and read back.
LATEST_TIME = 253_402_300_799
MAX_LINE = 1_000_000_000  # no text file has a billion lines; SQLite's integers stop at 2^63
MAX_TAGS = 100
MAX_TAG_CHARS = 200


@dataclass(frozen=True)
class Refused:
    """A line that was not imported, and why."""

    line: int
    reason: str

    def describe(self, name: str) -> str:
        return f"{name}:{self.line}: {self.reason}"


@dataclass(frozen=True)
class ImportFile:
    """The records of a file that can be stored, and the lines refused."""

    memories: tuple[NewMemory, ...]
    refused: tuple[Refused, ...]


def _text(name: str, value, limit: int = validation.MAX_FIELD_CHARS) -> str:
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string, not {json_type(value)}")
    return validation.checked_text(name, value, limit)


def _optional_text(name: str, value) -> str | None:
    return None if value is None else _text(name, value)


def json_type(value) -> str:
    """What a refused value is, as the JSON shows it: its type, or a number itself."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return {dict: "an object", list: "a list", str: "a string", bool: "true or false"}.get(type(value), "null")


def _line(name: str, value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be a whole number, not {json_type(value)}")
    if not 1 <= value <= MAX_LINE:
        raise InputError(f"{name} is {value}; a line number is between 1 and {MAX_LINE:,}")
    return value


def _created_at(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        seconds = validation.parse_date(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise InputError(f"created_at must be an ISO date or epoch seconds, not {json_type(value)}")
    if seconds is not None and not (math.isfinite(seconds) and 0 <= seconds <= LATEST_TIME):
        raise InputError(f"created_at {value!r} is outside 1970-01-01 .. 9999-12-31")
    return seconds


def _tags(value) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InputError(f"tags must be a list of strings, not {json_type(value)}")
    if len(value) > MAX_TAGS:
        raise InputError(f"tags has {len(value)} entries; the limit is {MAX_TAGS}")
    tags = tuple(_text(f"tags[{i}]", tag, MAX_TAG_CHARS) for i, tag in enumerate(value))
    for i, tag in enumerate(tags):
        if "," in tag or not tag.strip():  # stored comma-separated
            raise InputError(f"tags[{i}] {tag!r} is empty or holds a comma")
    return tags


def _source(value) -> Source:
    if value is None or isinstance(value, str):
        return Source(path=_optional_text("source", value), origin="import")
    if not isinstance(value, dict):
        raise InputError(f"source must be a path or an object, not {json_type(value)}")
    start, end = _line("source.line_start", value.get("line_start")), _line("source.line_end", value.get("line_end"))
    if start is not None and end is not None and end < start:
        raise InputError(f"source.line_end {end} is before source.line_start {start}")
    return Source(
        path=_optional_text("source.path", value.get("path")),
        line_start=start,
        line_end=end,
        commit=_optional_text("source.commit", value.get("commit")),
        origin="import",
        filetype=_optional_text("source.filetype", value.get("filetype")),
    )


def memory_from_record(record, project: str | None) -> NewMemory:
    """The memory a record describes; InputError naming the first field that cannot be stored."""
    if not isinstance(record, dict):
        raise InputError(f"expected a JSON object, not {json_type(record)}")
    text = record["text"] if "text" in record else record.get("body")
    if text is None or (isinstance(text, str) and not text.strip()):
        raise InputError("'text' is missing or empty")
    text = _text("text", text, validation.MAX_BODY_CHARS)
    if not validation.without_private(text).strip():
        raise InputError("'text' is empty once its <private> spans are removed")
    kind = record.get("kind") or "memory"
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return NewMemory(
        body=text,
        kind=kind,
        title=_text("title", record.get("title") or "", validation.MAX_TITLE_CHARS),
        project=_optional_text("project", record.get("project", project)),
        branch=_optional_text("branch", record.get("branch")),
        source=_source(record.get("source")),
        created_at=_created_at(record.get("created_at")),
        tags=_tags(record.get("tags")),
    )


def read_import(lines: Iterable[str], project: str | None) -> ImportFile:
    """Every line checked: the memories that can be stored and the lines refused, by number."""
    memories, refused = [], []
    for number, record, error in numbered_values(lines):
        try:
            if error:
                raise InputError(error)
            memories.append(memory_from_record(record, project))
        except InputError as exc:
            refused.append(Refused(number, str(exc)))
    return ImportFile(tuple(memories), tuple(refused))
