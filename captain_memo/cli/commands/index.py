"""`captain-memo index [PATH ...] [--git]`: bring note folders, skills and git history up to date."""

from __future__ import annotations

from captain_memo.base.terminal import one_line
from captain_memo.cli.commands._common import (
    add_command,
    add_json_arg,
    add_quiet_arg,
    open_indexing_memo,
    open_memo,
    print_json,
)

HELP = "index note and skill folders (and git history with --git), re-embedding only what changed"
DESCRIPTION = """Without PATH: the personal folders in CAPTAIN_MEMO_NOTE_DIRS / CAPTAIN_MEMO_SKILL_DIRS, this
repository's docs/decisions, docs/adr, .captain-memo/memory and .captain-memo/skills, the coding
agents' files (AGENTS.md, CLAUDE.md, GEMINI.md, .github/copilot-instructions.md, .cursor/rules,
.claude/skills ...) and the folders of this repository indexed by name before. Unchanged text is
never embedded again; deleted files' memories are removed."""


def register(sub) -> None:
    p = add_command(sub, "index", run, HELP, DESCRIPTION)
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or folders to index instead of the configured ones; a folder in a repository is remembered, "
        "and every later plain `index` there refreshes it",
    )
    p.add_argument("--list", action="store_true", help="list the folders a plain `index` reads here, and exit")
    p.add_argument(
        "--forget",
        metavar="FOLDER",
        help="stop refreshing a folder indexed by name, and remove the memories indexed from it",
    )
    p.add_argument(
        "--git", action="store_true", help="also store new commit messages of this repository as observations"
    )
    p.add_argument("--branch", help="branch recorded on new and changed memories (default: the current git branch)")
    p.add_argument(
        "--max-commits",
        type=int,
        metavar="N",
        help="with --git, read at most the newest N new commits (default: CAPTAIN_MEMO_GIT_MAX_COMMITS or 5000)",
    )
    add_json_arg(p, "print the counts as JSON")
    add_quiet_arg(p)


def run(args) -> int:
    from captain_memo.errors import InputError

    if args.max_commits is not None and args.max_commits < 1:
        raise InputError("--max-commits must be at least 1")
    if args.list or args.forget:
        if args.paths or args.git:
            raise InputError(f"{'--list' if args.list else '--forget'} takes no PATH and no --git")
        return list_sources(args) if args.list else forget_folder(args)
    with open_indexing_memo(args) as memo:
        outcome = memo.index(
            args.paths, git=args.git, branch=args.branch, show_progress=not args.quiet, max_commits=args.max_commits
        )
    report, history, team = outcome.notes, outcome.git, outcome.team
    if args.json:
        print_json(
            {
                "notes": report.to_json(),
                "git": history.to_json() if history else None,
                "team": team.to_json() if team else None,
                "looked_in": list(outcome.looked_in),
                "found": [f.to_json() for f in outcome.found],
                "remembered": list(outcome.remembered),
            }
        )
        return 0
    print_report(report, history, outcome.max_commits)
    if team is not None:
        from captain_memo.presentation.words import counted

        for path, reason in team.skipped_files:
            print(f"skipped {one_line(str(path))}: {one_line(reason)}")
        embedded = counted(team.chunks_embedded, "chunk")
        print(f"team store (the repository's notes): {team.counts()} ({embedded} embedded)")
    print_sources(outcome)
    return 0


def print_sources(outcome) -> None:
    """Where a run looked when it read nothing, what it could read, and which folders it remembered."""
    for path in outcome.remembered:
        print(f"remembered {one_line(path)}/: every plain `captain-memo index` in this repository refreshes it")
    if outcome.looked_in and outcome.files == 0:
        print("no notes in: " + ", ".join(one_line(p) for p in outcome.looked_in))
    if outcome.found:
        print("not indexed: " + ", ".join(one_line(f.describe()) for f in outcome.found))
        first = one_line(outcome.found[0].path)
        print(f"  to add one: captain-memo index {first} (remembered: later plain runs refresh it too)")


def list_sources(args) -> int:
    from captain_memo.presentation.words import counted

    with open_memo(args) as memo:
        sources = memo.index_sources()
    if args.json:
        print_json(sources)
        return 0
    where = f"in {sources['repository']}" if sources["repository"] else "here (outside any repository)"
    present = [row for row in sources["folders"] if row["exists"]]
    print(f"a plain `captain-memo index` {one_line(where)} reads:" if present else f"nothing to read {one_line(where)}")
    width = max((len(row["path"]) for row in present), default=0)
    for row in present:
        files = counted(row["files"], "note")
        print(f"  {one_line(row['path']).ljust(width)}  {row['kind']:<6}  {row['from']:<12}  {files}")
    absent = [one_line(row["path"]) for row in sources["folders"] if not row["exists"]]
    if absent:
        print("and would read (not here now): " + ", ".join(absent))
    for found in sources["found"]:
        print(f"not indexed: {one_line(found['path'])} ({found['files']:,} notes): captain-memo index {found['path']}")
    return 0


def forget_folder(args) -> int:
    from captain_memo.presentation.words import counted

    with open_memo(args) as memo:
        path, removed = memo.forget_folder(args.forget)
    print(
        f"forgot {one_line(path)}/: plain runs no longer read it; {counted(removed, 'memory', 'memories')} indexed from it removed"
    )
    return 0


def print_report(report, history, cap: int) -> None:
    from captain_memo.presentation.index_summary import history_left_out, left_out
    from captain_memo.presentation.words import counted

    for path, reason in report.skipped_files:
        print(f"skipped {one_line(str(path))}: {one_line(reason)}")
    for path, message in report.warnings:
        print(f"note {one_line(str(path))}: {one_line(message)}")
    notes = left_out(report)
    print(
        f"notes: {report.counts()} ({counted(report.files, 'file')} read, "
        f"{counted(report.chunks_embedded, 'chunk')} embedded)" + (f"; {notes}" if notes else "")
    )
    if history is not None:
        for sha, message in history.warnings:
            print(f"note {'' if sha == 'embedder' else 'commit '}{one_line(sha)}: {one_line(message)}")
        commits = history_left_out(history, cap)
        print(
            f"git: {counted(history.indexed, 'new commit')} · {history.unchanged:,} already stored "
            f"({counted(history.chunks_embedded, 'chunk')} embedded)" + (f"; {commits}" if commits else "")
        )
