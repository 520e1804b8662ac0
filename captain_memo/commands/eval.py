"""`captain-memo eval --data DIR [DIR ...]`: ranking quality on BEIR-style retrieval sets."""

from __future__ import annotations

import shlex
import sys
import time

from captain_memo.commands._common import print_json


def register(sub) -> None:
    p = sub.add_parser(
        "eval", help="measure ranking quality on BEIR-style data",
        description="Load each BEIR-style folder (corpus.jsonl, queries.jsonl, qrels.tsv) into a throwaway store "
                    "and run every query through recall with each leg alone, each profile and each ablation.")
    p.add_argument("--data", nargs="+", required=True, metavar="DIR", help="BEIR-style folders")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of Markdown")
    p.add_argument("--dump", metavar="FILE", help="write every query's results per method as JSON lines")
    p.add_argument("--out", metavar="FILE.md", help="also write the Markdown tables to this file")
    p.add_argument("--cache", metavar="DIR",
                   help="embedding cache folder (default $XDG_CACHE_HOME/captain-memo/embeddings)")
    p.add_argument("--no-ablations", action="store_true", help="only the legs and the profiles")
    p.set_defaults(run=run)


def run(args) -> int:
    from captain_memo.config import embed_config
    from captain_memo.embeddings import make_embedder
    from captain_memo.evaluation import report
    from captain_memo.evaluation.cache import CachedEmbedder, EmbeddingCache, default_cache_dir
    from captain_memo.evaluation.data import load
    from captain_memo.evaluation.methods import default_methods
    from captain_memo.evaluation.runner import evaluate

    datasets = [load(folder) for folder in args.data]  # every folder checked before any work starts
    cache = EmbeddingCache(args.cache or default_cache_dir())
    embedder = CachedEmbedder(make_embedder(embed_config(), backoff=False), cache)
    methods = default_methods(with_ablations=not args.no_ablations)
    names = [m.name for m in methods]
    results = []
    try:
        for ds in datasets:
            started = time.monotonic()
            results.append(evaluate(ds, embedder, methods, progress=True))
            print(f"captain-memo eval: {ds.name}: {len(ds.docs):,} documents, {len(ds.queries):,} queries x "
                  f"{len(methods)} methods in {time.monotonic() - started:.0f} s", file=sys.stderr)
    finally:
        cache.close()
    if args.dump:
        report.write_dump(args.dump, results)
    command = "captain-memo " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["eval"] \
        else "captain-memo eval --data " + " ".join(shlex.quote(str(d)) for d in args.data)
    text = report.markdown(results, names, command, embedder.model_id)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    if args.json:
        print_json({"command": command, "model": embedder.model_id, "machine": report.machine(),
                    "sets": [report.set_json(r, names) for r in results]})
    else:
        print(text, end="")
    return 0
