"""The rules every front end's arguments meet: types, ranges and sizes, field by field.

One set of rules, written as the JSON-schema subset an MCP tool shows its client (``type``,
``minimum``/``maximum``, ``minLength``/``maxLength``, ``enum``, ``pattern``), and one checker. The
MCP tools check their calls with it (requests/tool_arguments.py declares each tool's arguments in
its terms), the warm service checks every request it reads from its socket with it
(requests/operations.py), and the command line's requests pass the same check before they run,
in the service or in the command's own process. A check names the field and what is wrong, and
never echoes a long value back (a 10 MB string, or a secret).

Imports nothing heavy: the command line's thin path imports it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from captain_memo.base.kinds import KINDS
from captain_memo.errors import InputError

MAX_BODY_CHARS = 1_000_000
MAX_TITLE_CHARS = 1_000
MAX_FIELD_CHARS = 4_096  # a path, a project, a branch
MAX_QUERY_CHARS = 10_000
MAX_HITS = 1_000  # a recall's limit; an agent's tool offers fewer (requests/tool_arguments.py)
MAX_LINE = 2**31 - 1  # a line number
# Dates as seconds since 1970: from 1970 up to the year 9999 (what ISO dates can say).
LATEST_TIME = 253_402_300_799.0
PROFILES = ("v3", "v2", "legacy")
# A memory id as every front end takes it: "12" in this machine's store, "t12" in the team store.
ID_PATTERN = "^t?[1-9][0-9]{0,18}$"
# A memory opened at a line of its file, as a recall hit inside a long section names it: "12:310"
# (memory 12 at the part holding line 310), "t12:310" in the team store; a plain id as above.
PART_ID_PATTERN = "^t?[1-9][0-9]{0,18}(:[1-9][0-9]{0,9})?$"
PART_ID_HINT = '"12", "t12" or "12:310" (memory 12 at the part holding line 310 of its file)'
MAX_IDEMPOTENCY_KEY = 64  # an agent's name for one save (a UUID is 36): a retry with it saves nothing new
MAX_ID = 2**63 - 1  # SQLite's largest integer; a larger id could only fail deeper down

MAX_CURSOR_CHARS = 200  # a page cursor (page_cursor): a few dozen characters

_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list}


def text(limit: int, min_length: int = 0, nullable: bool = False) -> dict:
    spec: dict = {"type": ["string", "null"] if nullable else "string", "maxLength": limit}
    return {**spec, "minLength": min_length} if min_length else spec


def whole(minimum: int, maximum: int, nullable: bool = False) -> dict:
    return {"type": ["integer", "null"] if nullable else "integer", "minimum": minimum, "maximum": maximum}


def flag() -> dict:
    return {"type": "boolean"}


def one_of(choices, nullable: bool = False) -> dict:
    return {"type": ["string", "null"] if nullable else "string", "enum": list(choices)}


# The fields of the requests front ends send (app.RecallRequest, app.RememberRequest).
RECALL_FIELDS = {
    "query": text(MAX_QUERY_CHARS),  # empty: the engine says so in its own words
    "cwd": text(MAX_FIELD_CHARS, 1),
    "project": text(MAX_FIELD_CHARS, nullable=True),
    "branch": text(MAX_FIELD_CHARS, nullable=True),
    "limit": whole(1, MAX_HITS, nullable=True),
    "profile": one_of(PROFILES, nullable=True),
    "all_projects": flag(),
    "how": one_of(("search", "auto")),  # how the hits reach the user, for Tide (records.Surfacing)
    "team": flag(),  # the team store too, when one is set
}
REMEMBER_FIELDS = {
    "text": text(MAX_BODY_CHARS),  # empty: "nothing to remember" (engine.prepare)
    "cwd": text(MAX_FIELD_CHARS, 1),
    "kind": one_of(KINDS),
    "title": text(MAX_TITLE_CHARS),
    "file": text(MAX_FIELD_CHARS, nullable=True),
    "line_start": whole(1, MAX_LINE, nullable=True),
    "line_end": whole(1, MAX_LINE, nullable=True),
    "created_at": {"type": ["number", "null"], "minimum": 0, "maximum": LATEST_TIME},
    "project": text(MAX_FIELD_CHARS, nullable=True),
    "branch": text(MAX_FIELD_CHARS, nullable=True),
    "allow_secrets": flag(),
    "team": flag(),
    # Chosen by the client once per remember: a request run twice (the service stopped after
    # taking it, the client running it itself) is saved once.
    "request_key": {**text(32, nullable=True), "pattern": "[0-9a-f]{32}", "patternHint": "32 hex digits"},
}


# Another process's texts to embed (app.EmbedRequest, an `index` or `import` asking the engine):
# at most a few model batches a request, so an engine that stops answering costs little work.
MAX_EMBED_TEXTS = 256
EMBED_FIELDS = {
    "texts": {
        "type": "array",
        "items": text(MAX_BODY_CHARS),
        "minItems": 1,
        "maxItems": MAX_EMBED_TEXTS,
        "maxTotalChars": MAX_BODY_CHARS,
    },
    "model": text(MAX_FIELD_CHARS, 1),  # the model the asking process would embed with itself
}


def checked_fields(where: str, specs: dict, data: dict) -> dict:
    """``data`` when each field meets its spec (and the line range is in order), else InputError
    naming the first that does not."""
    for name, value in data.items():
        checked_value(f"{where}: {name}", specs[name], value)
    lines_in_order(where, data.get("line_start"), data.get("line_end"))
    return data


def lines_in_order(where: str, start: int | None, end: int | None) -> None:
    if end is not None and start is None:
        raise InputError(f"{where}: line_end needs line_start")
    if start is not None and end is not None and end < start:
        raise InputError(f"{where}: line_end ({end}) comes before line_start ({start})")


def checked_value(where: str, spec: dict, value: Any):
    """``value`` when it meets ``spec``, else InputError naming ``where`` and what is wrong (never
    the string it was given: it may be a secret)."""
    if spec.get("pattern") in (ID_PATTERN, PART_ID_PATTERN):
        return checked_id(where, value, spec["pattern"])
    kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
    if value is None and "null" in kinds:
        return value
    kind = next((k for k in kinds if k != "null" and _of_kind(value, k)), None)
    if kind is None:
        named = " or ".join(_named(k) for k in kinds if k != "null")
        raise InputError(f"{where} must be {named}, not {json_type(value)}")
    if kind == "string":
        _check_string(where, spec, value)
    elif kind == "array":
        _check_array(where, spec, value)
    elif kind in ("integer", "number"):
        _check_number(where, spec, value, kind)
    return value


def checked_id(where: str, value: Any, pattern: str = ID_PATTERN) -> str:
    """A memory id as a string ("12", "t12"; "12:310" where ``pattern`` takes a part). A number is
    refused as the schema says, whole or not: one rule for every tool (``show 9`` was taken while
    ``forget 9.0`` was refused)."""
    examples = PART_ID_HINT if pattern == PART_ID_PATTERN else '"12" or "t12"'
    if not isinstance(value, str):
        raise InputError(f"{where} must be a string such as {examples}, not {json_type(value)}")
    if not re.fullmatch(pattern, value) or int(value.partition(":")[0].lstrip("t")) > MAX_ID:
        raise InputError(f"{where} is not a memory id: give one as recall shows it, such as {examples}")
    return value


def id_and_line(text: str, where: str) -> tuple[str, int | None]:
    """``12`` or ``12:310`` (memory 12 opened at line 310 of its file, as a recall hit names it) as
    the id and the line; InputError naming ``where`` when what follows the colon is not a line."""
    memory_id, colon, line = text.partition(":")
    if not colon:
        return text, None
    if not re.fullmatch(r"[0-9]{1,10}", line.strip()):
        raise InputError(f"{where}: give a memory id (12, t12) or a memory and a line of it (12:310)")
    return memory_id, int(line)


def _named(kind: str) -> str:
    return f"{'an' if kind in ('integer', 'array') else 'a'} {kind}"


def _of_kind(value: Any, kind: str) -> bool:
    return isinstance(value, _JSON_TYPES[kind]) and not (kind in ("integer", "number") and isinstance(value, bool))


def _check_string(where: str, spec: dict, value: str) -> None:
    if "pattern" in spec and not re.fullmatch(spec["pattern"], value):
        hint = spec.get("patternHint", "a number, or a team memory's id such as t12")
        raise InputError(f"{where} must be {hint}")
    if len(value) > spec.get("maxLength", len(value)):
        raise InputError(f"{where} is {len(value):,} characters; the limit is {spec['maxLength']:,}")
    if len(value.strip()) < spec.get("minLength", 0):
        raise InputError(f"{where} is empty")
    if "enum" in spec and value not in spec["enum"]:
        raise InputError(f"{where} must be one of {', '.join(spec['enum'])}")


def _check_array(where: str, spec: dict, value: list) -> None:
    low, high = spec.get("minItems", 0), spec.get("maxItems", len(value))
    if not low <= len(value) <= high:
        raise InputError(f"{where} holds {len(value):,} items; it takes {low:,} to {high:,}")
    for i, item in enumerate(value):
        checked_value(f"{where}[{i}]", spec["items"], item)
    total = sum(len(item) for item in value if isinstance(item, str))
    if total > spec.get("maxTotalChars", total):
        raise InputError(f"{where} is {total:,} characters in all; the limit is {spec['maxTotalChars']:,}")


def _check_number(where: str, spec: dict, value: float, kind: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where} must be a finite number")
    low, high = spec.get("minimum"), spec.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"from {low}" + (f" to {high:g}" if isinstance(high, float) else f" to {high}" if high else " up")
        raise InputError(f"{where} must be {'a whole number' if kind == 'integer' else 'a number'} {bounds}")


def json_type(value) -> str:
    names = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


def short(value, limit: int = 60) -> str:
    value = str(value)
    return value if len(value) <= limit else value[:limit] + "…"


# -- page cursors (MCP resources/list) -----------------------------------------------------------
# Opaque to the client: base64 of where the next page starts, {"store": "local", "at": created_at,
# "id": id} (the last memory listed) or {"store": "team", "offset": n}.
_CURSOR_FIELDS = {"local": {"store", "at", "id"}, "team": {"store", "offset"}}


def page_cursor(position: dict) -> str:
    import base64
    import json

    return base64.urlsafe_b64encode(json.dumps(position, separators=(",", ":")).encode()).decode()


def cursor_position(cursor: str) -> dict:
    """The position ``cursor`` (from page_cursor) names, or InputError: a cursor is passed back as it
    came, never made up."""
    import base64
    import binascii
    import json

    wrong = InputError("invalid cursor: pass back the nextCursor of the previous page as it came")
    if len(cursor) > MAX_CURSOR_CHARS:
        raise wrong
    try:
        position = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        raise wrong from None
    store = position.get("store") if isinstance(position, dict) else None
    if not isinstance(store, str) or set(position) != _CURSOR_FIELDS.get(store, ()):
        raise wrong
    numbers = [position[name] for name in ("at", "id", "offset") if name in position]
    if not all(_of_kind(n, "number") and math.isfinite(n) and n >= 0 for n in numbers):
        raise wrong
    if not all(_of_kind(position[name], "integer") for name in ("id", "offset") if name in position):
        raise wrong
    if page_cursor(position) != cursor:  # one spelling per position: base64 would take stray bytes
        raise wrong
    return position
