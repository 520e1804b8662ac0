"""`captain-memo recall QUERY`: search, rank and explain."""

from __future__ import annotations

import os
import time

from captain_memo.base.terminal import one_line
from captain_memo.cli.commands._common import add_command, add_context_args, add_json_arg, print_json, run_request
from captain_memo.presentation.text import footer, terminal_hit, warning

HELP = "search memories"
DESCRIPTION = "Search memories with the hybrid ranker."


def register(sub) -> None:
    p = add_command(sub, "recall", run, HELP, DESCRIPTION)
    p.add_argument("query", nargs="+", help="what to look for")
    p.add_argument("-n", "--limit", type=int, default=None, help="how many hits (default 10)")
    p.add_argument(
        "--profile",
        choices=["v3", "v2", "legacy"],
        help="ranking profile (default v3; v2 is the seed design's, legacy is RRF, both frozen)",
    )
    p.add_argument("--all-projects", action="store_true", help="search every project, not only this repository's")
    add_json_arg(p, "machine-readable output (doc/json.md)")
    p.add_argument("--explain", action="store_true", help="show each hit's scores and multipliers")
    add_context_args(p)


def run(args) -> int:
    # The request's JSON (operations.RecallRequest's fields): the warm path sends it as it is, and requests/operations.py,
    # 5 ms of imports, is loaded only when the recall runs in this process.
    request = {
        "query": " ".join(args.query),
        "cwd": os.getcwd(),
        "project": args.project,
        "branch": args.branch,
        "limit": args.limit,
        "profile": args.profile,
        "all_projects": args.all_projects,
    }
    data = run_request(args, "recall", request)
    project = data.pop("project", None)  # the repository searched; not part of --json
    if args.json:
        print_json(data)
    else:
        print(render(data, args.explain, searched(project, args.all_projects)))
    return 0


def searched(project: str | None, all_projects: bool) -> str:
    """What a recall looked through, for the line that says nothing matched."""
    if all_projects:
        return "every project's memories and personal notes"
    if project is None:
        return "personal notes only (not inside a git repository); --all-projects searches every project's memories too"
    return f"{project} and personal notes; --all-projects searches every project's memories too"


def render(result: dict, explain: bool = False, scope: str | None = None) -> str:
    """A recall's JSON (presentation/views.py ``recall_json``) as the lines the terminal shows."""
    now = time.time()
    lines = [one_line(result["notice"])] if result.get("notice") else []
    for hit in result["hits"]:
        lines.extend(terminal_hit(hit, now, explain, flat=one_line))
    if not result["hits"]:
        lines.append(f"no memory matched in {scope}" if scope else "no memory matched")
    lines.append(footer(result))
    said = warning(result, flat=one_line)
    if said:
        lines.append(f"warning: {said}")
    return "\n".join(lines)
