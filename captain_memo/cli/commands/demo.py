"""`captain-memo demo`: the bundled sample notes in a throwaway store, and one explained recall."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from captain_memo.cli.commands._common import add_command
from captain_memo.cli.commands.importer import read_records
from captain_memo.cli.commands.recall import render
from captain_memo.presentation.views import recall_json

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_notes.jsonl"
DEMO_QUERY = "get_effective_contract_price rounding"


def register(sub) -> None:
    p = add_command(sub, "demo", run, "load the bundled sample notes into a temporary store and explain a recall")
    p.add_argument("query", nargs="*", help=f"what to recall (default: {DEMO_QUERY!r})")
    p.add_argument("--branch", default="feature/contract-pricing", help="the branch to recall from")


def run(args) -> int:
    from captain_memo.base.git_context import GitContext
    from captain_memo.memo import Memo
    from captain_memo.requests.operations import recall_in

    no_repository = GitContext(None, None, None, None)  # the sample notes belong to no project

    query = " ".join(args.query) or DEMO_QUERY
    with tempfile.TemporaryDirectory(prefix="captain-memo-demo-") as folder:
        with Memo.open(args.db or Path(folder) / "memo.db") as memo:
            added, _ = memo.import_memories(read_records(str(SAMPLE), None), "loading sample notes")
            print(
                f"loaded {added} sample notes into a temporary store (embedded offline with {memo.embedder.model_id})"
            )
            print(f"\n$ captain-memo recall --explain --branch {args.branch} {query!r}\n")
            result = memo.recall(recall_in(no_repository, {"query": query, "branch": args.branch}))
            print(render(recall_json(result, time.time()), explain=True))
    return 0
