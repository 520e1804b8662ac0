"""`captain-memo mcp`: serve the memory to coding agents over the Model Context Protocol (stdio)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("mcp", help="serve the memory to coding agents (MCP over stdio)",
                       description="An MCP server on stdin/stdout: tools recall, remember, show, supersede and "
                                   "forget, and each memory as captain-memo://memory/{id} (doc/mcp.md).")
    p.add_argument("--separate-worktrees", action="store_true",
                   help="give each worktree of a repository its own project (default: they share one)")
    p.set_defaults(run=run)


def run(args) -> int:
    from captain_memo.mcpserver.server import serve

    return serve(args.db, share_worktrees=not args.separate_worktrees)
