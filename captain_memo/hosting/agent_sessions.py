"""An agent's MCP session held in the process that serves the store's engine (the service, or the
editor's host), for the relay its `captain-memo mcp` runs (hosting/relay.py).

The session is the same server as on stdio (server.py), on the connection's lines; its calls go
straight to the engine of this process (``engine``), so nothing is loaded per agent but the
session itself. ``serve_here`` holds such a session in the relay's own process instead, on an engine
of its own, while the store's engine cannot be reached (hosting/relay.py closes it when it can).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from io import TextIOWrapper
from pathlib import Path

from captain_memo.errors import InputError

log = logging.getLogger("captain_memo")


def checked_request(request) -> tuple[str, bool]:
    """The folder the agent works in and whether worktrees share a project, as the relay sent them."""
    if not isinstance(request, dict):
        raise InputError("mcp: the request must be a JSON object")
    folder, share = request.get("folder"), request.get("share_worktrees", True)
    if not isinstance(folder, str) or not os.path.isabs(folder) or len(folder) > 4096:
        raise InputError("mcp: folder must be an absolute path")
    if not isinstance(share, bool):
        raise InputError("mcp: share_worktrees must be true or false")
    return folder, share


def serve_session(reader, writer, folder: str, share_worktrees: bool, engine: Callable[[str, dict], object], db: Path):
    """Serve one session on a connection's binary ``reader`` and ``writer`` until either side ends it."""
    from captain_memo.mcpserver.memory_calls import MemoryService

    _serve(reader, writer, folder, share_worktrees, MemoryService(str(db), engine=engine))


def serve_here(conn: socket.socket, folder: str, share_worktrees: bool, db: str, why: str) -> threading.Thread:
    """An agent's relay whose engine went away and none other answers: the session on ``conn`` (its
    end of a socket pair) runs on an engine opened in the relay's own process, on a thread, until
    the relay closes it (the store's engine serves again) or the agent ends it. The agent is told
    once, with ``why``."""
    from captain_memo.mcpserver.memory_calls import MemoryService, open_warm_memo

    def serve() -> None:
        service = MemoryService(db, open_memo=open_warm_memo)  # every call here: the relay rejoins
        service.run_here_for_a_while(why)
        with conn, conn.makefile("rb") as reader, conn.makefile("wb") as writer:
            _serve(reader, writer, folder, share_worktrees, service)

    thread = threading.Thread(target=serve, name="captain-memo-here", daemon=True)
    thread.start()
    return thread


def _serve(reader, writer, folder: str, share_worktrees: bool, service) -> None:
    import anyio

    from captain_memo.mcpserver.mcp_server import MemoryServer
    from captain_memo.mcpserver.workspace import Workspace

    front = MemoryServer(service, Workspace(folder, share_worktrees=share_worktrees))
    stdin = anyio.wrap_file(TextIOWrapper(reader, encoding="utf-8", errors="replace"))
    stdout = anyio.wrap_file(TextIOWrapper(writer, encoding="utf-8", write_through=True))
    try:
        anyio.run(front.serve_lines, stdin, stdout)
    except Exception as exc:  # the agent's relay went away mid-answer: it carries the session over
        log.info("an agent's session ended: %s", exc)
    finally:
        front.close()
