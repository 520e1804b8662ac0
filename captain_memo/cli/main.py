"""`captain-memo`: a thin command line over the library. Each subcommand lives in
captain_memo/cli/commands/<name>.py (the hook and the MCP server in their own packages, OTHER_FRONT_ENDS)
and registers itself with ``register(subparsers)``. A plain command line for a command a serving
engine answers is read without argparse (plain_args.py); argparse reads every other one."""

from __future__ import annotations

import sys

from captain_memo.base.terminal import EscapedStream, one_line
from captain_memo.cli import plain_args
from captain_memo.errors import CaptainMemoError

TYPE_CHECKING = False  # typing itself is not imported: the warm path has no use for it
if TYPE_CHECKING:
    import argparse

# The commands the warm service answers, and the module of each: their parser is built from that
# module alone, so the thin path imports nothing more (serve-embeddings' defaults import numpy).
COMMANDS = "captain_memo.cli.commands"
# The other front ends the executable runs, each by its one command module (the only way one front
# end reaches another): the prompt hook, and the MCP server with the relay that holds its session.
OTHER_FRONT_ENDS = {"hook": "captain_memo.hook.prompt_hook", "mcp": "captain_memo.mcpserver.command"}
THIN_COMMANDS = {
    "recall": f"{COMMANDS}.recall",
    "remember": f"{COMMANDS}.memories",
    "service": f"{COMMANDS}.service",
    "hook": OTHER_FRONT_ENDS["hook"],
}
# Commands whose parser is built from their module alone, and whose plain line plain_args reads: the
# thin ones, and `mcp`, which mostly relays an agent's session to the engine and stays resident for
# as long as the agent runs.
ALONE_COMMANDS = {**THIN_COMMANDS, "mcp": OTHER_FRONT_ENDS["mcp"]}


def command_modules(argv: list[str]) -> list[str]:
    """Every command module (dotted names), or only the thin command's when ``argv`` names one."""
    tokens = iter(argv)
    for token in tokens:
        if token == "--db":
            next(tokens, None)
        elif not token.startswith("-"):
            if token in ALONE_COMMANDS:
                return [ALONE_COMMANDS[token]]
            break
    import pkgutil

    from captain_memo.cli import commands

    own = sorted(f"{COMMANDS}.{m.name}" for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))
    return own + sorted(OTHER_FRONT_ENDS.values())


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv`` (every command when None)."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(prog="captain-memo", description="A developer's memory: remember and recall.")
    declare_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in command_modules(argv or []):
        importlib.import_module(name).register(sub)
    return parser


def declare_options(parser) -> None:
    """The options before the command, declared to argparse or to plain_args."""
    from captain_memo import __version__

    parser.add_argument("--version", action="version", version=f"captain-memo {__version__}")
    parser.add_argument(
        "--db",
        help="database file (default: $CAPTAIN_MEMO_DB, $CAPTAIN_MEMO_HOME/memo.db, "
        "or $XDG_DATA_HOME/captain-memo/memo.db)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    parser.add_argument(
        "--no-service",
        action="store_true",
        help="run in this process, without the warm service (also CAPTAIN_MEMO_SERVICE=0)",
    )


def command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (the top-level one when there is none)."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


def argparse_args(argv: list[str]):
    """``argv`` read by argparse: its help, version and errors (which exit) are the command line's."""
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the command's own usage, not the top level's: `recall --bogus` shows recall's
        command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = plain_args.parsed(argv, declare_options, ALONE_COMMANDS) or argparse_args(argv)
    if args.command not in ALONE_COMMANDS or args.verbose:  # else set up if they run here (open_memo)
        from captain_memo.base.stderr_log import configure

        configure(args.verbose)
    if not getattr(args, "run", None):  # no command: argparse read the line
        build_parser(argv).print_help()
        return 2
    stdout, sys.stdout = sys.stdout, EscapedStream(sys.stdout)  # stored text never reaches the terminal raw
    try:
        return _run(args)
    finally:
        sys.stdout = stdout


def _run(args) -> int:
    try:
        return int(args.run(args) or 0)
    except CaptainMemoError as exc:
        from captain_memo.base.progress import end_lines

        end_lines()
        print(f"captain-memo: {one_line(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        from captain_memo.base.progress import end_lines

        end_lines()  # the message on a line of its own, below what the progress line showed
        print("captain-memo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a SQLite failure mid-command gets a message; anything else is a bug
        from captain_memo.config import db_path
        from captain_memo.memo import readable_error

        error = readable_error(exc, getattr(args, "db", None) or db_path())
        if error is None:
            raise
        print(f"captain-memo: {one_line(str(error))}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
