"""Change questions on a git history: is the newest commit touching a module in the top 3?

    python scripts/bench_changes.py REPO [--notes N] [--max-commits 1500] [--min-commits 3]
    python scripts/bench_changes.py --history ../shared/histories/flask.jsonl [--notes 300]
    python scripts/bench_changes.py --generate 320 REPO

Indexes the newest ``--max-commits`` commits of REPO (``index --git``) into a throwaway store, and
with ``--notes N`` a folder of N generated notes about the same modules beside them (how-tos,
decisions, changelog sections: prose that competes with the commits, as docs do); then, for every
module (a .py file touched by ``--min-commits`` or more of them), asks "latest change to <stem>",
"what changed most recently in <stem>" and "latest change to <path>", and prints the share of
questions whose newest non-merge commit touching the module is in the top 3, with the misses.
``--history`` first rebuilds a repository from a recorded history (captain_memo/bench/histories.py);
``--generate N`` writes a generated one of N commits (captain_memo/bench/latest.py).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from captain_memo.base.git_context import git_context
from captain_memo.bench import changes
from captain_memo.bench.histories import rebuild
from captain_memo.bench.latest import generate_history
from captain_memo.config import embed_config
from captain_memo.embeddings import make_embedder
from captain_memo.engine.core import Engine
from captain_memo.sources.git_history import index_history
from captain_memo.sources.indexer import index_paths
from captain_memo.store import Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", help="the repository (made here with --history or --generate)")
    parser.add_argument("--history", type=Path, help="rebuild REPO (default: a temporary folder) from this .jsonl")
    parser.add_argument("--generate", type=int, metavar="N", help="first generate a history of N commits in REPO")
    parser.add_argument("--notes", type=int, default=0, help="generated notes to index beside the history")
    parser.add_argument("--max-commits", type=int, default=1500)
    parser.add_argument("--min-commits", type=int, default=3)
    parser.add_argument("--profiles", default="v3")
    parser.add_argument(
        "--phrasings", action="store_true", help="also: what's new, a file's name, a package's name, short tags"
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="captain-memo-changes-"))
    root = Path(args.repo) if args.repo else folder / "repo"
    if args.history:
        rebuild(args.history, root)
    elif args.generate:
        generate_history(root, commits=args.generate)
    engine = Engine(Store(folder / "memo.db"), make_embedder(embed_config()))
    modules = changes.modules_touched(root, args.max_commits, args.min_commits)
    started = time.monotonic()
    report = index_history(engine, root, max_commits=args.max_commits)
    print(f"indexed {report.indexed} commits in {time.monotonic() - started:.0f} s")
    if args.notes:
        changes.write_notes(folder / "notes", list(modules), count=args.notes)
        index_paths(engine, [folder / "notes"])
        print(f"indexed {args.notes} notes beside them")
    project = git_context(root).project
    print(f"{len(modules)} modules; newest commit touching the module in the top 3:")
    print("| profile | " + " | ".join(f'"{form}"' for form in changes.FORMS) + " | all |")
    print("|---|" + "---:|" * (len(changes.FORMS) + 1))
    for profile in args.profiles.split(","):
        result = changes.measure(engine, project, changes.cases_for(modules), profile=profile)
        shares = [f"{result.share(form):.0%} ({result.found[form]}/{result.asked[form]})" for form in changes.FORMS]
        print(f"| {profile} | " + " | ".join(shares) + f" | {result.share():.1%} |")
        for question, rank in result.misses:
            print(f"    miss: {question!r} (rank {rank or 'over 10'})")
    if args.phrasings:
        phrasings(engine, root, project, args)
    engine.close()


def phrasings(engine, root: Path, project, args) -> None:
    """The phrasings a new user tried: each form's share, packages, and short tags accepted."""
    from captain_memo.sources.git_history import read_tags

    modules = changes.modules_touched(root, args.max_commits, args.min_commits)
    packages = changes.packages_touched(root, args.max_commits, args.min_commits)
    cases = changes.cases_for(modules, changes.PHRASINGS) + changes.cases_for(packages, (changes.PACKAGE_FORM,))
    result = changes.measure(engine, project, cases, profile=args.profiles.split(",")[0])
    for form in result.asked:
        print(f"| {form!r} | {result.share(form):.0%} ({result.found[form]}/{result.asked[form]}) |")
    for question, rank in result.misses:
        print(f"    miss: {question!r} (rank {rank or 'over 10'})")
    short = sorted({name.rsplit(".0", 1)[0] for name in read_tags(root) if name.endswith(".0")})
    accepted = []
    for name in short:
        for question in (f"what changed since {name}", f"what changed since the {name} release"):
            notice = engine.recall(question, project=project, limit=3, record=False).notice
            accepted.append("after the tag" in notice)
    print(f"| short tags ({len(short)}: since X, since the X release) | {sum(accepted)}/{len(accepted)} accepted |")


if __name__ == "__main__":
    main()
