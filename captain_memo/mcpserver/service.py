"""What each MCP tool does, through the application interface (memo.py), kept warm for the session.

The store is opened by the first call that needs it (the model loads with the first embedding, not
before), with the in-memory vector index the editor host uses: an agent's session is long-lived
like an editor's. Every method takes checked arguments (tools.py) and the workspace's
git context, and returns plain JSON-ready data; the server turns it into MCP results. The engine is
used by one thread at a time (the server runs every call on one worker thread).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from captain_memo import secrets, validation
from captain_memo.errors import CaptainMemoError, InputError
from captain_memo.gitctx import GitContext
from captain_memo.memo import Memo
from captain_memo.records import NewMemory, RecallRequest, Source

log = logging.getLogger("captain_memo")
RECENT_RESOURCES = 50
MAX_CLIENT_NAME = 64


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


def open_warm_memo(db: str | None) -> Memo:
    from captain_memo.config import db_path

    return Memo.open(db or db_path(), warm=True)


class MemoryService:
    def __init__(self, db: str | None = None, open_memo: Callable[[str | None], Memo] = open_warm_memo):
        self.db = db
        self._open = open_memo
        self._memo: Memo | None = None

    @property
    def database_path(self) -> Path:
        from captain_memo.config import db_path

        return Path(self.db).expanduser() if self.db else db_path()

    def memo(self) -> Memo:
        if self._memo is not None and self._memo.file_moved():
            self.drop_memo()  # moved away or replaced: its last writes go into it, the path opens afresh
        if self._memo is None:
            self._memo = self._open(self.db)
        return self._memo

    def drop_memo(self) -> None:
        """Close the store (a damaged file): the next call opens the file afresh."""
        memo, self._memo = self._memo, None
        if memo is not None:
            memo.close()

    close = drop_memo

    # -- tools ----------------------------------------------------------------------------

    def recall(self, args: dict, ctx: GitContext) -> dict:
        from captain_memo.presentation.views import locate_hits, recall_json

        result = self.memo().recall(
            RecallRequest(
                args["query"],
                project=ctx.project,
                branch=ctx.branch,
                limit=args["limit"],
                all_projects=args["all_projects"],
            )
        )
        found = locate_hits(recall_json(result), ctx)
        scope = {"project": ctx.project, "branch": ctx.branch, "all_projects": args["all_projects"]}
        return recall_answer(found, scope, args.get("detail") or "compact", args["explain"])

    def remember(self, args: dict, ctx: GitContext, client_name: str | None) -> dict:
        # No one to ask: what looks like a credential is redacted, and the result says what was.
        validation.checked_text("text", args["text"], validation.MAX_BODY_CHARS)  # positions as sent
        validation.checked_text("title", args["title"], validation.MAX_TITLE_CHARS)
        text, title, found = secrets.redacted_memory(args["text"], args["title"])
        source = self._source(args, ctx, origin_of(client_name))
        memory = NewMemory(
            body=text, kind=args["kind"], title=title, project=ctx.project, branch=ctx.branch, source=source
        )
        memo = self.memo()
        if args["team"]:
            # The team store embeds what it stores at once or not at all: no vector waits.
            ref = memo.remember_team(memory)
            saved, vector = memo.get(ref), True
        else:
            local_id = memo.remember(memory)
            memo.checkpoint()  # the file alone is complete again (a copy or move takes everything)
            saved, vector = memo.get(local_id), memo.missing_vectors(local_id) == 0
        return {
            "id": str(saved.ref),
            "kind": saved.kind,
            "title": saved.display_title,
            "project": saved.project,
            "branch": saved.branch,
            "source": self._memory_json(saved, ctx)["source"],
            "redacted": [finding.describe() for finding in found],
            "private_left_out": any(validation.private_spans(args[name]) for name in ("text", "title")),
            "vector": vector,
            "team": args["team"],
        }

    def show(self, args: dict, ctx: GitContext) -> dict:
        return self._memory_json(self.memo().show(args["id"]), ctx)

    def read(self, memory_id: str, ctx: GitContext) -> dict:
        """A memory in full without counting as opening it (a client may read resources unasked)."""
        return self._memory_json(self.memo().get(memory_id), ctx)

    def recent(self, ctx: GitContext, limit: int = RECENT_RESOURCES) -> list[dict]:
        """The newest memories a recall here would search: this project's and personal notes.
        Clients list resources as they connect: that must not create a store nobody asked for."""
        if self._memo is None and not self.database_path.exists():
            return []
        memo = self.memo()
        memories = memo.list_memories(ctx.project, all_projects=False, limit=limit)
        if memo.team is not None:
            try:
                memories += memo.list_team_memories(ctx.project, limit)
            except CaptainMemoError as exc:  # the team store down: the local ones are still worth listing
                log.warning("mcp: team memories not listed: %s", exc)
        return [{"id": str(m.ref), "kind": m.kind, "title": m.display_title} for m in memories]

    def supersede(self, args: dict) -> dict:
        memo = self.memo()
        if args["undo"]:
            memo.unsupersede(args["old"])
            return {"old": args["old"], "superseded_by": None}
        if args.get("new") is None:
            raise InputError("supersede: new is required (or set undo to make old current again)")
        memo.supersede(args["old"], args["new"])
        return {"old": args["old"], "superseded_by": args["new"]}

    def forget(self, args: dict) -> dict:
        self.memo().forget(args["id"])
        return {"forgotten": args["id"]}

    # -- parts ----------------------------------------------------------------------------

    def _source(self, args: dict, ctx: GitContext, origin: str):
        start, end = args.get("line_start"), args.get("line_end")
        if end is not None and start is None:
            raise InputError("remember: line_end needs line_start")
        if start is not None and end is not None and end < start:
            raise InputError(f"remember: line_end ({end}) comes before line_start ({start})")
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

    def _memory_json(self, memory, ctx: GitContext) -> dict:
        from captain_memo.presentation.views import opened_json

        return string_ids(opened_json(memory, ctx))


def string_ids(data: dict) -> dict:
    """``data`` with its ids as strings ("12", "t12"): one id type, the one the tools take."""
    for key in ("id", "superseded_by"):
        if data.get(key) is not None:
            data[key] = str(data[key])
    return data
