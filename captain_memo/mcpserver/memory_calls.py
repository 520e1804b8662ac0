"""What each MCP tool does: asked of the engine that serves the store, else run here.

The store's engine is held by one process (the warm service, or the editor's host serving it on
the same socket): the MCP server sends each call there over the store's socket, starting the
service as the command line does when none runs, so an agent's session loads no model of its own
and starts warm. Where no service can be reached or started (a runtime folder that cannot be
written, another user's socket, a service that does not answer in time), the call runs on an
engine opened in this process, and the agent is told so once; the service is tried again after
``RETRY_SERVICE_S``. What a tool does with the store lives in the library (agent_calls.py), the
same code in either process. The engine here is used by one thread at a time (server.py).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from captain_memo.base.git_context import GitContext
from captain_memo.memo import Memo
from captain_memo.requests import agent_calls
from captain_memo.requests.agent_calls import origin_of, string_ids  # noqa: F401 - the MCP server's names for them

log = logging.getLogger("captain_memo")
RETRY_SERVICE_S = 60.0  # after a fallback, calls run here this long before the service is tried again


def open_warm_memo(db: str | None) -> Memo:
    from captain_memo.config import db_path

    return Memo.open(db or db_path(), warm=True)


class MemoryService:
    """``open_memo``: run every call in this process on the Memo it opens (no service)."""

    def __init__(
        self,
        db: str | None = None,
        open_memo: Callable[[str | None], Memo] | None = None,
        env=None,
        engine: Callable[[str, dict], object] | None = None,
    ):
        """``engine``: the store's engine in this very process (a session hosted by the service or
        the editor's host): each call is ``engine(op, request)``, never run elsewhere."""
        self.db = db
        self._open = open_memo or open_warm_memo
        self._remote = open_memo is None
        self._engine = engine
        self._env = os.environ if env is None else env
        self._memo: Memo | None = None
        self._local_until = 0.0
        self._notices: list[str] = []
        self._told = False
        self._told_stale = False  # the stored history's newer commits were said (once a session)
        self.answered_by = "none yet"  # "service" or "this process": the last call's engine

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

    def take_notices(self) -> list[str]:
        """What the agent has not been told yet about where its calls run (each said once)."""
        notices, self._notices = self._notices, []
        return notices

    # -- a call, wherever it runs -----------------------------------------------------------

    def run_here_for_a_while(self, why: str) -> None:
        """The store's engine went away mid-session and none other could be had: calls run here,
        the agent is told once, and the service is tried again after RETRY_SERVICE_S."""
        self._local_until = time.monotonic() + RETRY_SERVICE_S
        self._fell_back([why])

    def call(self, tool: str, args: dict, workspace, client: str | None = None, key: str | None = None):
        """The answer to a tool call (or ``read``/``recent``) from the folder ``workspace`` is in;
        ``key``: the call's request key, when it came with one."""
        if tool == "recent" and self._memo is None and not self.database_path.exists():
            return {"resources": [], "next_cursor": None}  # clients list resources as they connect: no store made
        key = (key or _request_key()) if tool == "remember" else None
        # No store yet: a service started for it would make one and answer "0 memories"; here a read
        # says the store is missing, naming it (agent_calls.run).
        missing = self._engine is None and tool in ("recall", "show", "read") and not self.database_path.exists()
        answer = None if missing else self._ask_service(tool, args, workspace, client, key)
        if answer is not None or self._engine is not None:
            return answer
        ctx = workspace.context(fresh=tool == "remember")
        self.answered_by = "this process"
        answer = agent_calls.run(self.memo(), tool, args, ctx, client, key)
        if tool == "recall" and not self._told_stale:  # no engine follows the repository here
            self._tell_stale(args.get("query"), ctx)
        return answer

    def _tell_stale(self, query, ctx) -> None:
        """Once a session: the first change question's answer says how many newer commits the
        stored history lacks (an agent asking again and again is not told again and again)."""
        notice = self.memo().stale_notice(ctx.root, ctx.project, ctx.branch, query if isinstance(query, str) else "")
        if notice:
            self._told_stale = True
            self._notices.append(notice)

    def _ask_service(self, tool, args, workspace, client, key):
        request = {
            "tool": tool,
            "args": args,
            "folder": workspace.folder,
            "share_worktrees": workspace.share_worktrees,
            "client": client,
            "request_key": key,
        }
        op = "agent" if tool in agent_calls.WRITES else "agent_read"
        if self._engine is not None:
            self.answered_by = "this process"
            return self._engine(op, request)
        if not self._remote or time.monotonic() < self._local_until:
            return None
        from captain_memo.hosting.client import call

        said: list[str] = []
        answer = call(op, request, str(self.database_path.absolute()), self._env, say=said.append)
        if answer is not None:
            self.answered_by = "service"
            if self._memo is not None:
                self.drop_memo()  # the service is back: one engine per store again
            return answer
        self._local_until = time.monotonic() + RETRY_SERVICE_S
        # The client's words name the request and end with what it does next; here the agent
        # knows its call by the tool's name, and the notice says where it runs.
        self._fell_back([line.replace(f"`{op}`", f"`{tool}`").split("; running")[0] for line in said])
        return None

    def _fell_back(self, said: list[str]) -> None:
        if not said:  # switched off (CAPTAIN_MEMO_SERVICE=0): the user's choice, nothing to tell
            return
        why = "; ".join(said)
        if self._told:
            log.info("mcp: running in this process: %s", why)
            return
        self._told = True
        notice = f"Running Captain Memo's engine in this MCP server's own process ({why})."
        log.warning("mcp: %s", notice)
        self._notices.append(notice)

    # -- the tools, in this process ---------------------------------------------------------

    def recall(self, args: dict, ctx: GitContext) -> dict:
        return agent_calls.recall(self.memo(), args, ctx)

    def remember(self, args: dict, ctx: GitContext, client_name: str | None) -> dict:
        return agent_calls.remember(self.memo(), args, ctx, client_name)

    def show(self, args: dict, ctx: GitContext) -> dict:
        return agent_calls.show(self.memo(), args, ctx)

    def supersede(self, args: dict) -> dict:
        return agent_calls.supersede(self.memo(), args)

    def forget(self, args: dict) -> dict:
        return agent_calls.forget(self.memo(), args)


def _request_key() -> str:
    return os.urandom(16).hex()
