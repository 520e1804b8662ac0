"""The tools an agent sees: names, descriptions written for a model choosing among them, MCP
annotations and what each returns (``outputSchema``).

What each tool takes is declared once, in requests/tool_arguments.py: its ``inputSchema`` is made
from that declaration, and every call is checked against the same declaration
(``checked_arguments``), so the schema the client was shown and the check cannot drift. The SDK's
low-level server passes arguments through unchecked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from captain_memo.base.fields import ID_PATTERN, short
from captain_memo.errors import InputError
from captain_memo.records import KINDS
from captain_memo.requests import tool_arguments


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    result: dict = field(default_factory=dict)  # the structuredContent's properties (output_schema)
    result_required: tuple[str, ...] = ()

    @property
    def input_schema(self) -> dict:
        """What the tool takes (tool_arguments.py): each argument's rule, words and default."""
        return tool_arguments.input_schema(self.name)

    @property
    def output_schema(self) -> dict:
        """What ``structuredContent`` holds: every fact the result's text states, so a client that
        hands the model only the structured result (Claude Code does) loses nothing. Open to
        fields added later (``additionalProperties`` is left as JSON Schema's default)."""
        properties = {**self.result, "notices": NOTICES}
        return {"type": "object", "properties": properties, "required": list(self.result_required)}

    @property
    def annotations(self) -> dict:
        return {
            "title": self.title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": False,
        }


# -- what each tool returns ---------------------------------------------------------------------
# No union of types where one type will do; null is allowed where the JSON holds it (a memory of no
# project, a team memory's author).


def _maybe(spec: dict) -> dict:
    """``spec``, or null: ``anyOf`` with one type each, as the Inspector's --strict asks (a list of
    types is lost on clients that map schemas onto a one-type dialect, such as Gemini's)."""
    described = {"description": spec["description"]} if "description" in spec else {}
    return {"anyOf": [{k: v for k, v in spec.items() if k != "description"}, {"type": "null"}], **described}


def _list_of(items: dict, description: str = "") -> dict:
    spec = {"type": "array", "items": items}
    return {**spec, "description": description} if description else spec


_STRING = {"type": "string"}
_RESULT_ID = {"type": "string", "pattern": ID_PATTERN, "description": '"12", or "t12" for a team memory.'}
NOTICES = _list_of(
    _STRING,
    "What the agent has not been told yet (the engine running in the MCP server's own process, a root "
    "skipped); present only when there is something to say, and the text's extra blocks say the same.",
)
REDACTED_ON_THE_WAY_OUT = _list_of(
    _STRING,
    "Each credential replaced on the way out (its kind and where), though the store keeps the text as "
    "given; the text says the same.",
)
SOURCE = {
    "type": "object",
    "description": "Where the memory comes from: a file's lines, a commit, an origin (mcp:<client>, cli, ...).",
    "properties": {
        "path": _maybe(_STRING),
        "line_start": _maybe({"type": "integer"}),
        "line_end": _maybe({"type": "integer"}),
        "commit": _maybe(_STRING),
        "origin": _maybe(_STRING),
        "filetype": _maybe(_STRING),
        "label": {"type": "string", "description": "The one line saying where it is, as the text shows it."},
        "file": _maybe({"type": "string", "description": "That file in the agent's working tree, when it is there."}),
    },
}
HIT = {
    "type": "object",
    "required": ["id", "kind", "title"],
    "properties": {
        "id": _RESULT_ID,
        "part": _maybe({"type": "string", "description": "A hit inside a long file: 12:310, the id show opens there."}),
        "kind": {"type": "string", "enum": list(KINDS)},
        "title": {"type": "string", "description": "The matching chunk's heading path."},
        "age": {"type": "string", "description": "How long ago it was saved: now, 5h, 3d, 4mo."},
        "store": {"type": "string", "description": "local, or team."},
        "author": _maybe({"type": "string", "description": "The role that wrote a team memory."}),
        "where": {
            "type": "string",
            "description": "The chunk's own lines (doc/team.md:130-141), a commit or an origin.",
        },
        "lines": {
            "anyOf": [{"type": "string"}, {"type": "array"}],
            "description": "compact: the lines holding the query's words; detail \"full\": the chunk's first and "
            "last line in its file ([start, end], nulls when it is in no file).",
        },
        "superseded_by": _maybe({**_RESULT_ID, "description": "Out of date: the memory that replaced it."}),
        "score": {"type": "number"},
        "branch": _maybe(_STRING),
        "project": _maybe(_STRING),
        "source": SOURCE,
        "excerpt": {"type": "string", "description": "The matching chunk's text, at most 600 characters."},
        "explain": _list_of(_STRING, "The score's trace: every multiplier and why."),
    },
}
RECALL_RESULT = {
    "query": _STRING,
    "detail": {"type": "string", "enum": ["compact", "full"]},
    "legs": _list_of(_STRING, "The search legs that answered: vector, keyword."),
    "stores": _list_of(_STRING, "The stores that answered: local, team."),
    "failed_legs": {
        "type": "object",
        "additionalProperties": _STRING,
        "description": "A leg or store that failed, and why.",
    },
    "notice": _maybe(
        {"type": "string", "description": "A question about time: its window, or the date it was read against."}
    ),
    "project": _maybe(_STRING),
    "branch": _maybe(_STRING),
    "all_projects": {"type": "boolean"},
    "profile": _STRING,
    "elapsed_ms": {"type": "number"},
    "hits": _list_of(HIT),
    "redacted": REDACTED_ON_THE_WAY_OUT,
    "database": _maybe({"type": "string", "description": "The store file this recall read."}),
}
REMEMBER_RESULT = {
    "id": _RESULT_ID,
    "kind": {"type": "string", "enum": list(KINDS)},
    "title": _STRING,
    "project": _maybe(_STRING),
    "branch": _maybe(_STRING),
    "source": SOURCE,
    "redacted": _list_of(_STRING, "Each credential redacted before saving: its line and kind, masked."),
    "private_left_out": {"type": "boolean"},
    "vector": {"type": "boolean", "description": "false: no vector yet; keyword search finds it meanwhile."},
    "team": {"type": "boolean"},
    "already_saved": {
        "type": "boolean",
        "description": "The same save was made before (its idempotency key, or an exact repeat within minutes): "
        "this is the first one's id and nothing new was stored.",
    },
}
MEMORY_RESULT = {
    "id": _RESULT_ID,
    "kind": {"type": "string", "enum": list(KINDS)},
    "title": _STRING,
    "body": {"type": "string", "description": "The whole text; show opened at a part gives it only with whole."},
    "created_at": {"type": "number"},
    "updated_at": _maybe({"type": "number"}),
    "project": _maybe(_STRING),
    "branch": _maybe(_STRING),
    "source": SOURCE,
    "superseded_by": _maybe(_RESULT_ID),
    "store": _STRING,
    "author": _maybe(_STRING),
    "age": _STRING,
    "tags": _list_of(_STRING),
    "stability": _maybe({"type": "number", "description": "Tide's stability in days: how slowly it fades."}),
    "last_surfaced": _maybe({"type": "number", "description": "When a recall last showed it (Unix seconds)."}),
    "opened_in_full": {"type": "boolean", "description": "Whether it was ever opened whole (Tide keeps it afloat)."},
    "redacted": REDACTED_ON_THE_WAY_OUT,
    "chunk": {
        "type": "object",
        "description": "Opened at a line (12:310): the part holding it, which the text shows first.",
        "required": ["title", "line_start", "line_end", "text"],
        "properties": {
            "title": _STRING,
            "line_start": {"type": "integer"},
            "line_end": {"type": "integer"},
            "text": _STRING,
        },
    },
}

RECALL = Tool(
    name="recall",
    title="Recall from the developer's memory",
    description=(
        "Search the developer's memory: notes, decisions, how-tos (skills) and observations saved from the "
        "editor, the command line or an agent. Use it before changing unfamiliar code, when an identifier, "
        "error message or file comes up, or when the user refers to an earlier decision. A query may be an "
        "identifier (get_effective_contract_price), an error text or a question in words. It searches the "
        "current repository's memories plus personal notes (all_projects searches every repository). Returns "
        "ranked hits, each with id, kind, the matching section's heading, age, store, file:lines and the "
        'lines that matched (detail "full" adds score, branch and the section\'s text); open one in full '
        "with `show` (a hit inside a long file names its part, 12:310, which `show` opens at that part). "
        "A hit marked superseded is out of date: prefer the memory that replaced it. "
        "The result names the stores and search legs that answered; if one failed, it says so."
    ),
    read_only=True,
    result=RECALL_RESULT,
    result_required=("query", "detail", "legs", "stores", "failed_legs", "hits"),
)

REMEMBER = Tool(
    name="remember",
    title="Save to the developer's memory",
    description=(
        "Save something worth knowing later: a fact learned while working (what a function really does, why "
        "a test fails, how to run something), a decision with its reason, or a procedure. Write it so it "
        "stands alone without this conversation, naming the identifiers and files it is about. kind: "
        "observation (default; a casual capture), memory (a curated fact or decision) or skill (a how-to). "
        "Give file and line_start/line_end when it is about specific code. It is saved in the current "
        "repository on the current branch, marked as saved by this agent. Text that looks like a credential "
        "is redacted before saving and the result says so; text inside <private>...</private> is never "
        "stored. team: save it to the team store the developer's whole team reads (only when the developer "
        "asked to share it; fails when no team store is set). Returns the new memory's id (t12 for a team one). "
        "The same text saved again within 10 minutes, or a retry with the same idempotency_key, returns the "
        "first save's id and stores nothing new."
    ),
    result=REMEMBER_RESULT,
    result_required=("id", "kind", "title", "source", "redacted", "private_left_out", "vector", "team"),
)

SHOW = Tool(
    name="show",
    title="Open a memory in full",
    description=(
        "Read one memory in full by its id (from recall): the whole text, its source and whether "
        "it was superseded. An id with a line, such as 12:310, opens memory 12 at the part holding "
        "line 310 of its file: that part and its place (heading path, lines), with whole: true the whole "
        "memory after it. Opening it tells the ranker it was useful, so it stays easy to find."
    ),
    read_only=True,
    result=MEMORY_RESULT,
    result_required=("id", "kind", "title", "source", "superseded_by", "store"),  # no body: a part alone
)

SUPERSEDE = Tool(
    name="supersede",
    title="Mark a memory as out of date",
    description=(
        "Mark memory `old` as out of date, replaced by memory `new` (save the corrected version with "
        "remember first). The old memory is kept and still found, ranked at half its score and marked "
        "superseded. With undo set to true, `old` becomes current again and `new` is not needed."
    ),
    idempotent=True,
    result={"old": _RESULT_ID, "superseded_by": _maybe(_RESULT_ID)},
    result_required=("old", "superseded_by"),
)

FORGET = Tool(
    name="forget",
    title="Delete a memory",
    description=(
        "Delete a memory permanently by its id. Only when the user asks for it, or the memory is "
        "wrong and would mislead; for a fact that changed, prefer supersede, which keeps history."
    ),
    destructive=True,
    idempotent=True,
    result={"forgotten": _RESULT_ID},
    result_required=("forgotten",),
)

TOOLS = {tool.name: tool for tool in (RECALL, REMEMBER, SHOW, SUPERSEDE, FORGET)}


def tool_named(name: str) -> Tool:
    tool = TOOLS.get(name)
    if tool is None:
        raise InputError(f"unknown tool {short(name)!r}; the tools are {', '.join(TOOLS)}")
    return tool


def checked_arguments(tool: Tool, arguments) -> dict:
    """The call's arguments with defaults filled in, or InputError naming the first wrong one; no
    arguments at all are none."""
    return tool_arguments.checked(tool.name, {} if arguments is None else arguments)
