"""What an agent's tools do with a store: recall, remember, show, supersede, forget, and the
memories offered as resources, each from plain JSON arguments and a git context to JSON answers.

One home for it, because two processes run it: the MCP server in its own process when no service
can be reached, and the warm service (or the editor's host) that holds the store's engine for every
front end. The arguments arrive checked against the MCP tools' schemas; the service checks them
again (``checked_call``) against the same declaration (tool_arguments.py), since its socket takes
any bytes.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from captain_memo.base import fields
from captain_memo.errors import InputError
from captain_memo.requests import tool_arguments

if TYPE_CHECKING:
    from captain_memo.base.git_context import GitContext

log = logging.getLogger("captain_memo")
RECENT_RESOURCES = 50
MAX_CLIENT_NAME = 64
# Calls that write run one at a time on the service's writer; opening a memory (show) counts it
# for Tide, a write too. The others may run twice (a lost answer is asked again).
WRITES = {"remember", "show", "supersede", "forget"}
# The answers that carry stored text: each says what was redacted from it (``redacted``: [] when nothing was).
SAYS_REDACTED = {"recall", "show", "read", "remember"}
# ``args`` for ``tool`` with defaults filled in, or InputError naming the first wrong argument: the
# rules the tool's inputSchema shows (tool_arguments.py), the one declaration of them.
checked_call = tool_arguments.checked


# A call as the MCP server sends it to the service: the tool's arguments, the folder the agent works
# in (the service reads its git context), the client's name (a remembered memory's origin) and,
# for a remember, the key that makes running it twice save it once (operations.remember_once).
ENVELOPE = {
    "tool": fields.one_of(tuple(tool_arguments.ARGUMENTS)),
    "args": {"type": "object"},
    "folder": fields.text(fields.MAX_FIELD_CHARS, 1),
    "share_worktrees": fields.flag(),
    "client": fields.text(fields.MAX_FIELD_CHARS, nullable=True),
    "request_key": fields.REMEMBER_FIELDS["request_key"],
}


def checked_envelope(request) -> dict:
    """A call read from the service's socket, every field checked, or InputError naming the first
    wrong one: nothing malformed reaches the store."""
    if not isinstance(request, dict):
        raise InputError(f"agent call: the request must be a JSON object, not {fields.json_type(request)}")
    unknown = sorted(set(request) - set(ENVELOPE))
    if unknown:
        raise InputError(f"agent call: unknown field {fields.short(unknown[0])!r}")
    missing = [name for name in ("tool", "args", "folder") if name not in request]
    if missing:
        raise InputError(f"agent call: {missing[0]} is required")
    checked = {"share_worktrees": True, "client": None, "request_key": None, **request}
    for name, value in checked.items():
        if name != "args":
            fields.checked_value(f"agent call: {name}", ENVELOPE[name], value)
    checked["args"] = checked_call(checked["tool"], checked["args"])
    return checked


def run(memo, tool: str, args: dict, ctx: GitContext, client: str | None = None, request_key: str | None = None):
    """The tool's answer, on ``memo``, as it may reach an agent. Every answer leaves through here,
    from this process and from the engine's (hosting/socket_server.py), so this is where no credential
    may pass: each string is redacted (a recall's hits from their whole chunk first, ``recall``),
    and an answer holding stored text says what was redacted in ``redacted``."""
    _store_exists(memo, tool, args)
    if tool == "remember":
        answer = remember(memo, args, ctx, client, request_key)
    elif tool == "recent":
        answer = recent(memo, ctx, args.get("cursor"))
    else:
        answer = _CALLS[tool](memo, args, ctx)
    return outbound(tool, answer)


def outbound(tool: str, answer):
    """``answer`` with no credential in any string; ``redacted`` lists what was replaced."""
    from captain_memo.base import secrets

    clean, found = secrets.redacted_json(answer)
    if tool in SAYS_REDACTED and isinstance(clean, dict):
        clean["redacted"] = list(dict.fromkeys([*(answer.get("redacted") or []), *found]))
    return clean


def _path_of(memo) -> str | None:
    path = getattr(memo, "path", None)
    return str(Path(path).absolute()) if path else None


def _store_exists(memo, tool: str, args: dict) -> None:
    """A read never creates the store it reads: an agent started with another HOME or
    CAPTAIN_MEMO_DB was answered "0 memories" from a new, empty store made on the spot."""
    path = getattr(memo, "path", None)
    if tool not in ("recall", "show", "read") or path is None or Path(path).exists():
        return
    if tool == "recall":  # a malformed query is named first: the model can mend that at once
        from captain_memo.base import validation

        validation.checked_text("query", args["query"], fields.MAX_QUERY_CHARS)
    if tool != "recall" and str(args.get("id", "")).lower().startswith("t"):
        return  # a team memory: the team store holds it
    from captain_memo.errors import NotFoundError

    raise NotFoundError(
        f"no memory store at {path}: nothing has been saved there yet (an agent started with another "
        "HOME or CAPTAIN_MEMO_DB reads another store); remember or `captain-memo index` creates it"
    )


# -- the tools ------------------------------------------------------------------------------


def recall(memo, args: dict, ctx: GitContext) -> dict:
    from captain_memo.presentation.outbound import redacted_recall
    from captain_memo.presentation.views import locate_hits, recall_json
    from captain_memo.requests import operations

    asked = {"query": args["query"], "limit": args["limit"], "all_projects": args["all_projects"]}
    result = memo.recall(operations.recall_in(ctx, asked))
    found, redacted = redacted_recall(locate_hits(recall_json(result), ctx))
    scope = {"project": ctx.project, "branch": ctx.branch, "all_projects": args["all_projects"]}
    answer = recall_answer(found, scope, args.get("detail") or "compact", args["explain"])
    # The store read, by path: an empty answer from another HOME's store must not pass for yours.
    return {**answer, "redacted": redacted, "database": _path_of(memo)}


def remember(memo, args: dict, ctx: GitContext, client: str | None, request_key: str | None = None) -> dict:
    from captain_memo.base import secrets, validation
    from captain_memo.records import NewMemory
    from captain_memo.requests import operations

    # No one to ask: what looks like a credential is redacted, and the result says what was.
    validation.checked_text("text", args["text"], validation.MAX_BODY_CHARS)  # positions as sent
    validation.checked_text("title", args["title"], validation.MAX_TITLE_CHARS)
    text, title, found = secrets.redacted_memory(args["text"], args["title"])
    memory = NewMemory(
        body=text,
        kind=args["kind"],
        title=title,
        project=ctx.project,
        branch=ctx.branch,
        source=_source(args, ctx, origin_of(client)),
    )
    already = False  # the same save made before (operations.agent_remember_once): its id, nothing new stored
    if args["team"]:
        # The team store embeds what it stores at once or not at all: no vector waits. An exact
        # copy already there is not stored twice.
        operations.CANCELLATIONS.refuse_if_cancelled(request_key, "remember")
        saved, vector = memo.get(memo.remember_team(memory)), True
    else:
        local_id, already = operations.agent_remember_once(memo, memory, args.get("idempotency_key"), request_key)
        memo.checkpoint()  # the file alone is complete again (a copy or move takes everything)
        saved, vector = memo.get(local_id), memo.missing_vectors(local_id) == 0
    return {
        "id": str(saved.ref),
        "kind": saved.kind,
        "title": saved.display_title,
        "project": saved.project,
        "branch": saved.branch,
        "source": memory_json(saved, ctx)["source"],
        "redacted": [finding.describe() for finding in found],
        "private_left_out": any(validation.private_spans(args[name]) for name in ("text", "title")),
        "vector": vector,
        "team": args["team"],
        "already_saved": already,
    }


def show(memo, args: dict, ctx: GitContext) -> dict:
    """A memory in full; opened at a line (``12:310``), its part holding that line as ``chunk``
    and, only with ``whole``, the memory's ``body`` too (as the command line's ``show --whole``)."""
    from captain_memo.presentation.views import part_at

    memory_id, line = fields.id_and_line(args["id"], "show: id")
    memory = memo.show(memory_id)
    data = memory_json(memory, ctx)
    if line is not None:
        data["chunk"] = part_at(memory, memo.chunk_texts(memory.ref), line)
        if not args.get("whole"):  # the part is what was asked for: a long section's 1,500 lines only on demand
            del data["body"]
    return data


def read(memo, args: dict, ctx: GitContext) -> dict:
    """A memory in full without counting as opening it (a client may read resources unasked)."""
    return memory_json(memo.get(args["id"]), ctx)


def recent(memo, ctx: GitContext, cursor: str | None = None, limit: int = RECENT_RESOURCES) -> dict:
    """A page of the memories a recall here would search, newest first: this project's and personal
    notes, then the team store's for the project (filling the page the local ones leave short).
    ``cursor``: where the page starts (the last page's ``next_cursor``, fields.page_cursor);
    ``next_cursor`` None after the last page."""
    position: dict = fields.cursor_position(cursor) if cursor else {"store": "local"}
    page: list = []
    following = None
    if position["store"] == "local":
        before = (position["at"], position["id"]) if "at" in position else None
        found = memo.list_memories(ctx.project, all_projects=False, limit=limit + 1, before=before)
        page = found[:limit]
        if len(found) > limit:
            following = {"store": "local", "at": page[-1].created_at, "id": page[-1].id}
        position = {"store": "team", "offset": 0}
    if following is None and memo.team is not None:
        room, offset = limit - len(page), position["offset"]
        team = _team_page(memo, ctx, offset, room)
        page += team[:room]
        following = {"store": "team", "offset": offset + room} if len(team) > room else None
    return {
        "resources": [{"id": str(m.ref), "kind": m.kind, "title": m.display_title} for m in page],
        "next_cursor": fields.page_cursor(following) if following else None,
    }


def _team_page(memo, ctx: GitContext, offset: int, room: int) -> list:
    """The team's memories from ``offset``, one more than ``room`` (to know whether more follow).
    By offset: the team store lists its newest first, and teams keep far fewer than one's own."""
    from captain_memo.errors import CaptainMemoError

    try:
        return memo.list_team_memories(ctx.project, offset + room + 1)[offset:]
    except CaptainMemoError as exc:  # the team store down: the local pages were still worth listing
        log.warning("mcp: team memories not listed: %s", exc)
        return []


def supersede(memo, args: dict, ctx: GitContext | None = None) -> dict:
    if args["undo"]:
        memo.unsupersede(args["old"])
        return {"old": args["old"], "superseded_by": None}
    if args.get("new") is None:
        raise InputError("supersede: new is required (or set undo to make old current again)")
    memo.supersede(args["old"], args["new"])
    return {"old": args["old"], "superseded_by": args["new"]}


def forget(memo, args: dict, ctx: GitContext | None = None) -> dict:
    memo.forget(args["id"])
    return {"forgotten": args["id"]}


_CALLS = {"recall": recall, "show": show, "read": read, "supersede": supersede, "forget": forget}


# -- parts ----------------------------------------------------------------------------------


def origin_of(client_name: str | None) -> str:
    """The stored origin of a memory an MCP client saved: ``mcp:<client name>``, or ``mcp``."""
    name = " ".join("".join(ch for ch in (client_name or "") if ch.isprintable()).split())[:MAX_CLIENT_NAME]
    return f"mcp:{name}" if name else "mcp"


def recall_answer(found: dict, scope: dict, detail: str, explain: bool) -> dict:
    """A recall's JSON (presentation/views.py) as an agent receives it: compact hits by default (id,
    kind, heading path, age, store, the matching lines), the full ones with ``detail: "full"``."""
    from captain_memo.presentation.text import compact_hit, fit_compact, full_hit
    from captain_memo.presentation.words import explain_lines

    now = time.time()
    shaped = full_hit if detail == "full" else compact_hit
    hits = []
    for hit in found["hits"]:
        entry = shaped(hit, now)
        if explain:
            entry["explain"] = explain_lines(hit)
        hits.append(string_ids(entry))
    answer = {
        "query": found["query"],
        "detail": detail,
        "legs": found["legs"],
        "stores": found["stores"],
        "failed_legs": found["failures"],
        "notice": found.get("notice"),  # a question about time: its window, or the date it was read against
    }
    if detail == "full":
        answer.update(profile=found["profile"], elapsed_ms=found["elapsed_ms"])
        return {**answer, **scope, "hits": hits}
    return fit_compact({**answer, **scope, "hits": hits})


def memory_json(memory, ctx: GitContext) -> dict:
    from captain_memo.presentation.views import opened_json

    return string_ids(opened_json(memory, ctx))


def string_ids(data: dict) -> dict:
    """``data`` with its ids as strings ("12", "t12"): one id type, the one the tools take."""
    for key in ("id", "superseded_by"):
        if data.get(key) is not None:
            data[key] = str(data[key])
    return data


def _source(args: dict, ctx: GitContext, origin: str):
    from captain_memo.records import Source

    start, end = args.get("line_start"), args.get("line_end")
    fields.lines_in_order("remember", start, end)
    file = args.get("file")
    if not file:
        if start is not None:
            raise InputError("remember: line_start needs file")
        return Source(origin=origin)
    path = Path(file).expanduser()
    if not path.is_absolute() and ctx.root:
        path = Path(ctx.root) / path
    return Source(
        path=ctx.relative(path),
        line_start=start,
        line_end=end if end is not None else start,
        commit=ctx.commit,
        origin=origin,
    )
