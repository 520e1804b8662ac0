"""Turning evaluation results into Markdown tables, JSON and a per-query dump."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Sequence

from captain_memo.evaluation.runner import QueryOutcome, SetResult

SUBSETS = ("all", "identifier", "plain")
SUBSET_LABELS = {"all": "all", "identifier": "with an identifier", "plain": "plain"}
# A question no text answers has no ranking to score: only whether the recall said so (its hit).
UNRANKED = "no answer"


def machine() -> dict:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def set_json(result: SetResult, methods: Sequence[str]) -> dict:
    summaries = result.summaries(methods)
    pool = {s.subset: {"n": s.n, "pool_recall": round(s.pool_recall, 4)} for s in summaries}
    return {
        "name": result.name,
        "docs": result.docs,
        "chunks": result.chunks,
        "queries": len(result.outcomes),
        "subsets": pool,
        "methods": [
            {
                "method": s.method,
                "subset": s.subset,
                "n": s.n,
                "ndcg@10": round(s.ndcg, 4),
                "recall@10": round(s.recall, 4),
                "mrr@10": round(s.mrr, 4),
                "hit@3": round(s.hit, 4),
            }
            for s in summaries
        ],
    }


def outcome_json(set_name: str, o: QueryOutcome) -> dict:
    """One line of the per-query dump: what each method returned and how it scored."""
    return {
        "set": set_name,
        "query_id": o.query.id,
        "query": o.query.text,
        "has_identifier": o.has_identifier,
        "relevant": o.relevant,
        "pool_recall": o.pool_recall,
        "methods": {
            name: {
                "docs": list(r.docs),
                "ndcg@10": round(r.ndcg, 4),
                "recall@10": round(r.recall, 4),
                "mrr@10": round(r.mrr, 4),
                "hit@3": r.hit,
            }
            for name, r in o.by_method.items()
        },
    }


def write_dump(path, results: Sequence[SetResult]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for result in results:
            for outcome in result.outcomes:
                handle.write(json.dumps(outcome_json(result.name, outcome), ensure_ascii=False) + "\n")


def _cells(s) -> str:
    return f"{s.ndcg:.3f} | {s.recall:.3f} | {s.mrr:.3f}"


def set_table(result: SetResult, methods: Sequence[str]) -> str:
    """One set: a row per method, nDCG@10 / R@10 / MRR@10 for all queries and each subset; a set
    whose questions have categories gets a second table, hit@3 and nDCG@10 per category."""
    summaries = {(s.method, s.subset): s for s in result.summaries(methods)}
    subsets = [sub for sub in SUBSETS if (methods[0], sub) in summaries]
    counts = {sub: summaries[(methods[0], sub)].n for sub in subsets}
    head = (
        "| method | "
        + " | ".join(f"{SUBSET_LABELS[sub]} (n={counts[sub]}): nDCG@10 | R@10 | MRR@10" for sub in subsets)
        + " |"
    )
    rule = "|---|" + "---:|---:|---:|" * len(subsets)
    rows = [f"| {name} | " + " | ".join(_cells(summaries[(name, sub)]) for sub in subsets) + " |" for name in methods]
    pool = ", ".join(f"{SUBSET_LABELS[sub]} {summaries[(methods[0], sub)].pool_recall:.3f}" for sub in subsets)
    categories = [sub for (name, sub) in summaries if name == methods[0] and sub not in SUBSETS]
    title = f"### {result.name}: {result.docs:,} documents ({result.chunks:,} chunks), {len(result.outcomes):,} queries"
    return "\n".join(
        [
            title,
            "",
            head,
            rule,
            *rows,
            "",
            f"Candidate-pool recall (relevant documents anywhere in the union of the two legs): {pool}.",
            *(["", category_table(summaries, methods, categories)] if categories else []),
        ]
    )


def category_table(summaries: dict, methods: Sequence[str], categories: Sequence[str]) -> str:
    """hit@3 and nDCG@10 per category of question; for those no text answers, the share where the
    recall said so (runner.said_no_match)."""
    head = "| method | " + " | ".join(
        f"{sub} (n={summaries[(methods[0], sub)].n}): " + ("said so" if sub == UNRANKED else "hit@3 | nDCG@10")
        for sub in categories
    )
    rule = "|---|" + "".join("---:|" if sub == UNRANKED else "---:|---:|" for sub in categories)
    rows = [
        f"| {name} | "
        + " | ".join(
            f"{summaries[(name, sub)].hit:.3f}"
            if sub == UNRANKED
            else f"{summaries[(name, sub)].hit:.3f} | {summaries[(name, sub)].ndcg:.3f}"
            for sub in categories
        )
        + " |"
        for name in methods
    ]
    return "\n".join([head + " |", rule, *rows])


def summary_table(results: Sequence[SetResult], methods: Sequence[str]) -> str:
    """nDCG@10 of every method on every set, all queries."""
    by = {(r.name, s.method): s for r in results for s in r.summaries(methods) if s.subset == "all"}
    head = "| method | " + " | ".join(r.name for r in results) + " |"
    rule = "|---|" + "---:|" * len(results)
    rows = [f"| {name} | " + " | ".join(f"{by[(r.name, name)].ndcg:.3f}" for r in results) + " |" for name in methods]
    return "\n".join(["nDCG@10, all queries:", "", head, rule, *rows])


def markdown(results: Sequence[SetResult], methods: Sequence[str], command: str, model_id: str) -> str:
    m = machine()
    parts = [
        "## Retrieval quality",
        "",
        f"Made by `{command}` with the embedding model `{model_id}`, on {m['cpu']} ({m['cores']} cores), "
        f"{m['system']}, Python {m['python']}. Metrics as BEIR computes them (pytrec_eval): nDCG@10 with linear "
        'gain, Recall@10, MRR@10, averaged over queries. "With an identifier": the query holds a code-shaped '
        "token (the identifier boost's rule).",
        "",
        summary_table(results, methods),
    ]
    for result in results:
        parts += ["", set_table(result, methods)]
    return "\n".join(parts) + "\n"
