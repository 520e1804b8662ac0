"""An agent's MCP session held in the process that serves the store's engine (the service, or the
editor's host), for the relay its `captain-memo mcp` runs (service/relay.py).

The session is the same server as on stdio (server.py), on the connection's lines; its calls go
straight to the engine of this process (``engine``), so nothing is loaded per agent but the
session itself.
"""

from __future__ import annotations

import logging
import os
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
    import anyio

    from captain_memo.mcpserver.server import MemoryServer
    from captain_memo.mcpserver.service import MemoryService
    from captain_memo.mcpserver.workspace import Workspace

    front = MemoryServer(MemoryService(str(db), engine=engine), Workspace(folder, share_worktrees=share_worktrees))
    stdin = anyio.wrap_file(TextIOWrapper(reader, encoding="utf-8", errors="replace"))
    stdout = anyio.wrap_file(TextIOWrapper(writer, encoding="utf-8", write_through=True))
    try:
        anyio.run(front.serve_lines, stdin, stdout)
    except Exception as exc:  # the agent's relay went away mid-answer: it carries the session over
        log.info("an agent's session ended: %s", exc)
    finally:
        front.close()
