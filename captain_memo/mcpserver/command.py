"""`captain-memo mcp`: serve the memory to coding agents over the Model Context Protocol (stdio)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve the memory to coding agents (MCP over stdio)",
        description="An MCP server on stdin/stdout: tools recall, remember, show, supersede and "
        "forget, and each memory as captain-memo://memory/{id} (doc/mcp.md).",
    )
    p.add_argument(
        "--folder",
        help="the folder to work in when the client declares no roots (default: the "
        "current directory); its repository and branch scope recall and remember",
    )
    p.add_argument(
        "--separate-worktrees",
        action="store_true",
        help="give each worktree of a repository its own project (default: they share one)",
    )
    p.set_defaults(run=run)


def run(args) -> int:
    """The session is held by the store's engine where one runs or can start (this process only
    relays it, hosting/relay.py); else, or once it could not be carried over, served here."""
    import os
    import sys
    from pathlib import Path

    from captain_memo.base.paths import db_path
    from captain_memo.errors import InputError
    from captain_memo.hosting.relay import Resume, relay

    # Python leaves a standard stream it found closed at start as None; the descriptor's number is
    # then taken by the next file opened (the event loop's epoll, the relay's selector), which the
    # server would read as its wire and crash on.
    closed = [name for name, stream in (("stdin", sys.__stdin__), ("stdout", sys.__stdout__)) if stream is None]
    if closed:
        raise InputError(
            f"mcp: {closed[0]} is not open; an MCP client runs this command with pipes for stdin and stdout"
        )

    if args.folder and not Path(args.folder).expanduser().is_dir():
        raise InputError(f"--folder {args.folder} is not a folder")
    folder = str(Path(args.folder).expanduser().resolve()) if args.folder else None
    share = not args.separate_worktrees
    use_service = not getattr(args, "no_service", False)  # off: this server, and every call of it, runs here
    relayed = (
        relay(args.db or db_path(), folder or os.getcwd(), share, here=_serve_here(args.verbose))
        if use_service
        else None
    )
    if isinstance(relayed, int):
        return relayed
    from captain_memo.base.stderr_log import configure
    from captain_memo.mcpserver.mcp_server import serve

    configure(args.verbose)

    resume = relayed if isinstance(relayed, Resume) else None
    return serve(args.db, folder=folder, share_worktrees=share, resume=resume, use_service=use_service)


def _serve_here(verbose: bool):
    """The session on an engine in this process, while the store's cannot be reached (imported
    only then: the relay's process stays small), its notices on stderr as the server's are."""

    def serve(*session):
        from captain_memo.base.stderr_log import configure
        from captain_memo.hosting.agent_sessions import serve_here

        configure(verbose)
        return serve_here(*session)

    return serve
