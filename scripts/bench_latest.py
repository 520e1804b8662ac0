"""Does "latest change to <module>" find the newest commit that touched it, on a real history?

    python scripts/bench_latest.py REPO [--under captain_memo/] [--db FILE] [--max-commits 5000]

Indexes REPO's history (``index --git``) into a throwaway store (or FILE, reused when it exists),
then asks both question forms for every module (a .py file touched by two or more of the indexed
commits) under each profile, and prints the share of modules whose newest commit is in the top 3.
With ``--generate N`` it first writes a generated history of N commits over 30 modules into REPO.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from captain_memo.base.git_context import git_context
from captain_memo.bench.latest import FORMS, generate_history, measure, newest_per_module
from captain_memo.config import embed_config
from captain_memo.embeddings import make_embedder
from captain_memo.engine.core import Engine
from captain_memo.sources.git_history import index_history
from captain_memo.store import Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--under", default="", help="only modules in this folder")
    parser.add_argument("--db", help="store to build (or reuse)")
    parser.add_argument("--generate", type=int, metavar="N", help="first generate a history of N commits in REPO")
    parser.add_argument("--profiles", default="v3,v2,legacy")
    args = parser.parse_args()
    root = Path(args.repo)
    if args.generate:
        generate_history(root, commits=args.generate)
    folder = tempfile.mkdtemp(prefix="captain-memo-latest-")
    engine = Engine(Store(args.db or Path(folder) / "memo.db"), make_embedder(embed_config()))
    started = time.monotonic()
    report = index_history(engine, root)
    print(f"indexed {report.indexed} commits in {time.monotonic() - started:.0f} s")
    newest = newest_per_module(root, 5000, under=args.under)
    print(f"{len(newest)} modules; newest commit of the module in the top 3:")
    print("| profile | " + " | ".join(f'"{form}"' for form in FORMS) + " |")
    print("|---|" + "---:|" * len(FORMS))
    for profile in args.profiles.split(","):
        result = measure(engine, git_context(root).project, newest, profile=profile)
        print(
            f"| {profile} | " + " | ".join(f"{result.share(form):.0%} ({result.found[form]})" for form in FORMS) + " |"
        )
    engine.close()


if __name__ == "__main__":
    main()
