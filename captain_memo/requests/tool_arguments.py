"""What each of an agent's calls takes, declared once: every argument's rule (base/fields.py's
JSON-schema subset), its default, whether it is required and the words a model reads about it.

Two things are made from it and nothing else: the ``inputSchema`` each MCP tool shows its client
(``input_schema``, served by mcpserver/tools.py), and the check every call meets (``checked``), in
the MCP server before it runs and again in the service, whose socket takes any bytes. A bound
written here is therefore the one the client is shown and the one that refuses: the two cannot
drift. A check names the argument and what is wrong with it, never echoing the value (a 10 MB
string must not come back in the error).

Imports nothing heavy: the service's socket and the thin MCP relay read it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from captain_memo.base import fields
from captain_memo.errors import InputError

MAX_RECALL_LIMIT = 50  # hits an agent may ask for (a command line's recall may ask for fields.MAX_HITS)
DEFAULT_RECALL_LIMIT = 10


class Arg(NamedTuple):
    """One argument: its rule, what a model reads about it, its default (None: none) and whether a
    call must give it."""

    rule: dict
    description: str = ""
    default: Any = None
    required: bool = False


_ID_WORDS = ' A string, as recall gives it: "12", or "t12" for a team memory.'


def _id(description: str) -> Arg:
    """A memory id, always a string: "12" for a memory of this machine's store, "t12" for one in the
    team store. One type, no union: some model providers reject union types in function
    declarations, and some clients send every argument as a string."""
    return Arg({"type": "string", "pattern": fields.ID_PATTERN}, description + _ID_WORDS, required=True)


ARGUMENTS: dict[str, dict[str, Arg]] = {
    "recall": {
        "query": Arg(
            fields.text(fields.MAX_QUERY_CHARS, 1),
            "What to look for: an identifier, an error message or a question.",
            required=True,
        ),
        "limit": Arg(fields.whole(1, MAX_RECALL_LIMIT), "How many hits.", DEFAULT_RECALL_LIMIT),
        "all_projects": Arg(fields.flag(), "Search every repository, not only the current one.", False),
        "explain": Arg(fields.flag(), "Add each hit's score trace (every multiplier and why).", False),
        "detail": Arg(
            fields.one_of(("compact", "full")),
            "compact: each hit's id, kind, heading, age, store and matching lines; full adds "
            "score, branch, source and the matching chunk's text.",
            "compact",
        ),
    },
    "remember": {
        "text": Arg(fields.text(fields.MAX_BODY_CHARS, 1), "The memory itself, standing alone.", required=True),
        "title": Arg(fields.text(fields.MAX_TITLE_CHARS), "A short title (default: the first line).", ""),
        "kind": Arg(fields.one_of(fields.KINDS), "observation, memory or skill.", "observation"),
        "file": Arg(
            fields.text(fields.MAX_FIELD_CHARS), "The source file it is about, relative to the repository root."
        ),
        "line_start": Arg(fields.whole(1, fields.MAX_LINE), "First line in that file."),
        "line_end": Arg(fields.whole(1, fields.MAX_LINE), "Last line in that file."),
        "team": Arg(fields.flag(), "Save to the team store instead of this developer's own.", False),
        "idempotency_key": Arg(
            fields.text(fields.MAX_IDEMPOTENCY_KEY, 1),
            "Any short string naming this save (a UUID, say): a retry with the same key, after a timeout or "
            "an error, returns the first save's id instead of saving again.",
        ),
    },
    "show": {
        "id": Arg(
            {"type": "string", "pattern": fields.PART_ID_PATTERN},  # a memory opened at a part too
            f"The memory's id, as recall gives it: {fields.PART_ID_HINT}.",
            required=True,
        ),
        "whole": Arg(fields.flag(), "With an id at a line (12:310): the whole memory too, after its part.", False),
    },
    "supersede": {
        "old": _id("The out-of-date memory's id."),
        "new": _id("The id of the memory replacing it.")._replace(required=False),
        "undo": Arg(fields.flag(), "Make `old` current again.", False),
    },
    "forget": {"id": _id("The id of the memory to delete.")},
    # Not tools: what the MCP server asks for its resources (resources/read, resources/list).
    "read": {"id": _id("The memory's id.")},
    "recent": {"cursor": Arg(fields.text(fields.MAX_CURSOR_CHARS), "Where the page starts (its nextCursor).")},
}


def input_schema(call: str) -> dict:
    """The JSON schema of ``call``'s arguments, as an MCP tool's ``inputSchema``."""
    args = ARGUMENTS[call]
    return {
        "type": "object",
        "properties": {name: _property(arg) for name, arg in args.items()},
        "required": [name for name, arg in args.items() if arg.required],
        "additionalProperties": False,
    }


def _property(arg: Arg) -> dict:
    described = {"description": arg.description} if arg.description else {}
    default = {"default": arg.default} if arg.default is not None else {}
    return {**arg.rule, **described, **default}


def checked(call: str, args) -> dict:
    """``args`` for ``call`` with defaults filled in (null counts as absent), or InputError naming
    the first wrong argument."""
    specs = ARGUMENTS.get(call) if isinstance(call, str) else None
    if specs is None:
        raise InputError(f"unknown tool {fields.short(str(call))!r}; the tools are {', '.join(ARGUMENTS)}")
    if not isinstance(args, dict):
        raise InputError(f"{call}: the arguments must be an object, not {fields.json_type(args)}")
    unknown = sorted(set(args) - set(specs))
    if unknown:
        raise InputError(f"{call}: unknown argument {fields.short(unknown[0])!r}; it takes {', '.join(specs)}")
    values = {name: arg.default for name, arg in specs.items() if arg.default is not None}
    values.update((name, value) for name, value in args.items() if value is not None)
    for name, value in values.items():
        values[name] = fields.checked_value(f"{call}: {name}", specs[name].rule, value)
    missing = [name for name, arg in specs.items() if arg.required and values.get(name) is None]
    if missing:
        raise InputError(f"{call}: {missing[0]} is required")
    return values
