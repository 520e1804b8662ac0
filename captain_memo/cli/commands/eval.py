"""`captain-memo eval --data DIR [DIR ...]`: ranking quality on BEIR-style retrieval sets."""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

from captain_memo.cli.commands._common import add_command, add_json_arg, print_json

HELP = "measure ranking quality on BEIR-style data"
DESCRIPTION = """Load each BEIR-style folder (corpus.jsonl, queries.jsonl, qrels.tsv) into a throwaway store and run
every query through recall with each leg alone, each profile and each ablation."""


def register(sub) -> None:
    p = add_command(sub, "eval", run, HELP, DESCRIPTION)
    p.add_argument(
        "--data",
        nargs="+",
        required=True,
        metavar="DIR",
        help="BEIR-style folders, or a built-in set: flask_store (Flask's docs and whole git history in one "
        "store), flask_docs (the same docs alone)",
    )
    p.add_argument(
        "--shared",
        metavar="DIR",
        default="../shared",
        help="the folder holding histories/ that the built-in sets are made from (default ../shared)",
    )
    add_json_arg(p, "print the figures as JSON instead of Markdown")
    p.add_argument("--dump", metavar="FILE", help="write every query's results per method as JSON lines")
    p.add_argument("--out", metavar="FILE.md", help="also write the Markdown tables to this file")
    p.add_argument(
        "--cache", metavar="DIR", help="embedding cache folder (default $XDG_CACHE_HOME/captain-memo/embeddings)"
    )
    p.add_argument(
        "--team-db",
        metavar="URL",
        help="measure through a team store: a postgresql:// URL of a server where its role may create "
        "databases (one is made per set and dropped afterwards)",
    )
    p.add_argument("--no-ablations", action="store_true", help="only the legs and the profiles")


def planned_sets(data: list[str], shared: Path) -> list:
    """(dataset, build) for each name: a BEIR-style folder, loaded now, or a built-in set, built in
    the run; a built-in set whose data is missing is skipped with a message saying what is missing."""
    from captain_memo.evaluation.data import Dataset, load
    from captain_memo.evaluation.flask_store import STORE_SETS, SetUnavailable, builder

    sets: list[tuple[Dataset, Callable | None]] = []
    for name in data:
        if name not in STORE_SETS:
            sets.append((load(name), None))
            continue
        try:
            sets.append((Dataset(name, (), (), {}), builder(name, shared)))
        except SetUnavailable as exc:
            print(f"captain-memo eval: {name}: {exc}", file=sys.stderr)
    return sets


def run(args) -> int:
    from captain_memo.base.urls import masked_url
    from captain_memo.evaluation import report
    from captain_memo.evaluation.cache import cached_embedder
    from captain_memo.evaluation.methods import default_methods
    from captain_memo.evaluation.runner import evaluate

    sets = planned_sets(args.data, Path(args.shared))  # every folder checked before any work starts
    if not sets:
        return 0
    embedder, cache = cached_embedder(args.cache)
    methods = default_methods(with_ablations=not args.no_ablations)
    names = [m.name for m in methods]
    results = []
    try:
        for ds, build in sets:
            started = time.monotonic()
            result = evaluate(ds, embedder, methods, progress=True, team_db=args.team_db, build=build)
            results.append(result)
            print(
                f"captain-memo eval: {result.name}: {result.docs:,} documents, {len(result.outcomes):,} queries x "
                f"{len(methods)} methods in {time.monotonic() - started:.0f} s",
                file=sys.stderr,
            )
    finally:
        cache.close()
    if args.dump:
        report.write_dump(args.dump, results)
    argv = [masked_url(a) if a == args.team_db else a for a in sys.argv[1:]]  # never a password in a report
    command = (
        "captain-memo " + " ".join(shlex.quote(a) for a in argv)
        if argv[:1] == ["eval"]
        else "captain-memo eval --data " + " ".join(shlex.quote(str(d)) for d in args.data)
    )
    text = report.markdown(results, names, command, embedder.model_id)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    if args.json:
        print_json(
            {
                "command": command,
                "model": embedder.model_id,
                "machine": report.machine(),
                "sets": [report.set_json(r, names) for r in results],
            }
        )
    else:
        print(text, end="")
    return 0
