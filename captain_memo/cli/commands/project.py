"""`project`: the string the team store names this clone's project by (what a grant names)."""

from __future__ import annotations

from captain_memo.cli.commands._common import add_command, context, open_memo

HELP = "print the project string of the repository here, as the team store's grants name it"
DESCRIPTION = """Print the project string of the repository in the current folder: its origin URL normalised
(github.com/Acme/Shop), else root: and its root commit. The team store's grants name projects by it,
the same for every clone."""


def register(sub) -> None:
    p = add_command(sub, "project", project, HELP, DESCRIPTION)
    p.add_argument("--grant", metavar="ROLE", help="print the SQL the store's owner runs to grant ROLE this project")
    p.add_argument("--curate", action="store_true", help="with --grant: the role may change anyone's memories")


def project(args) -> int:
    from captain_memo.errors import InputError

    here = context(args).project
    if here is None:
        raise InputError("not in a git repository: a project string names a repository (run it inside a clone)")
    with open_memo(args) as memo:
        print(memo.grant_sql(args.grant, here, args.curate) if args.grant else memo.shared_project(here))
    return 0
