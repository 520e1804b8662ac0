"""`stats` and `doctor`: what is stored, and whether everything it needs works."""

from __future__ import annotations

import sys

from captain_memo.cli.commands._common import add_command, add_json_arg, context, open_memo, print_json


def register(sub) -> None:
    p = add_command(sub, "stats", stats, "counts by kind and the Tide lifecycle of observations")
    add_json_arg(p)
    p = add_command(sub, "doctor", doctor, "check SQLite, sqlite-vec, FTS5, the model and the database")
    add_json_arg(p)
    p.add_argument(
        "--repair",
        action="store_true",
        help="first mend memories whose fields hold a value of the wrong type (a date stored as text): "
        "a date or number written as text is read, anything else cleared",
    )


def stats(args) -> int:
    with open_memo(args) as memo:
        data = memo.stats()
    if args.json:
        print_json(data)
        return 0
    print(f"database   {data['database']}")
    print(
        f"memories   {data['memories']}  (memory {data.get('memory', 0)}, skill {data.get('skill', 0)}, "
        f"observation {data.get('observation', 0)})"
    )
    print(f"chunks     {data['chunks']}  (vectors {data['vectors']}, waiting for a vector {data['pending_vectors']})")
    tide = data["tide"]
    print(f"tide       {tide['strengthening']} strengthening, {tide['active']} active, {tide['dormant']} dormant")
    if "team" in data:
        print(team_line(data["team"]))
    return 0


def team_line(team: dict) -> str:
    if "error" in team:
        return f"team       not counted: {team['error']}"
    return (
        f"team       {team['memories']} you can read  (memory {team['memory']}, skill {team['skill']}, "
        f"observation {team['observation']}; chunks {team['chunks']}, waiting for a vector {team['pending_vectors']})"
    )


def doctor(args) -> int:
    with open_memo(args) as memo:
        if args.repair:
            for line in memo.repair_fields():
                print(f"repaired {line}", file=sys.stderr if args.json else sys.stdout)
        results = memo.doctor(context(args).project)
    if args.json:
        print_json([{"item": item, "ok": ok, "detail": detail} for item, ok, detail in results])
    else:
        for item, ok, detail in results:
            print(f"{'ok  ' if ok else 'FAIL'} {item:<11} {detail}")
    return 0 if all(ok for _, ok, _ in results) else 1
