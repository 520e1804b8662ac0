"""`captain-memo recall QUERY`: search, rank and explain."""

from __future__ import annotations

import os
import time

from captain_memo import app
from captain_memo.commands._common import add_context_args, age, print_json, run_request
from captain_memo.terminal import one_line

FACTOR_LABELS = {
    "identifier": "identifier",
    "rare_token": "rare token",
    "branch": "branch",
    "superseded": "superseded",
    "recency": "recency",
    "tide": "tide",
    "touches": "touches",
    "calibrated": "calibrated",
}


def register(sub) -> None:
    p = sub.add_parser("recall", help="search memories", description="Search memories with the hybrid ranker.")
    p.add_argument("query", nargs="+", help="what to look for")
    p.add_argument("-n", "--limit", type=int, default=None, help="how many hits (default 10)")
    p.add_argument(
        "--profile",
        choices=["v3", "v2", "legacy"],
        help="ranking profile (default v3; v2 is the seed design's, legacy is RRF, both frozen)",
    )
    p.add_argument("--all-projects", action="store_true", help="search every project, not only this repository's")
    p.add_argument("--json", action="store_true", help="machine-readable output (doc/json.md)")
    p.add_argument("--explain", action="store_true", help="show each hit's scores and multipliers")
    add_context_args(p)
    p.set_defaults(run=run)


def run(args) -> int:
    request = app.RecallRequest(
        " ".join(args.query),
        os.getcwd(),
        project=args.project,
        branch=args.branch,
        limit=args.limit,
        profile=args.profile,
        all_projects=args.all_projects,
    )
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


def code_weighting(trace: dict) -> str:
    """How the fusion weighed a chunk of source code, or "" when it weighed it like every chunk."""
    weight = trace.get("code_vector_weight")
    if weight is None:
        return ""
    return f" (source code: vector x{weight:.2f} + keyword x{1 - weight:.2f})"


def explain_lines(hit: dict) -> list[str]:
    def num(v):
        return "absent" if v is None else f"{v:.3f}"

    trace = hit["explain"]
    lines = [
        f"      {hit['store']} store  vector {num(trace['vector'])}  keyword {num(trace['keyword'])}"
        f"  fused {trace['fused']:.3f}{code_weighting(trace)}"
    ]
    product = f"{trace['fused']:.3f}"
    for f in trace["factors"]:
        detail = f" ({one_line(f['detail'])})" if f["detail"] else ""
        lines.append(f"      x {f['value']:.3f} {FACTOR_LABELS.get(f['name'], f['name'])}{detail}")
        product += f" x {f['value']:.3f}"
    lines.append(f"      = {product} = {hit['score']:.3f}")
    return lines


def failure_line(name: str, why: str) -> str:
    """``vector leg failed: ...``, ``team store failed: ...``, ``team vector leg failed: ...``."""
    what = "team store" if name == "team" else ("local store" if name == "local" else f"{name} leg")
    return f"{what} failed: {one_line(why)}"


def render(result: dict, explain: bool = False, scope: str | None = None) -> str:
    """A recall's JSON (ranking/result.py ``result_json``) as the lines the terminal shows."""
    now = time.time()
    lines = [one_line(result["notice"])] if result.get("notice") else []
    for hit in result["hits"]:
        src = hit["source"]
        meta = " ".join(
            x for x in (age(now - hit["created_at"]), hit["branch"] and f"@{hit['branch']}", src["label"]) if x
        )
        title = one_line(hit["title"])
        lines.append(f"{hit['rank']:>2}. {hit['score']:.3f}  #{hit['id']} [{hit['kind']}] {title}  ({one_line(meta)})")
        if explain:
            lines.extend(explain_lines(hit))
    if not result["hits"]:
        lines.append(f"no memory matched in {scope}" if scope else "no memory matched")
    legs = " + ".join(result["legs"])
    stores = result.get("stores", ["local"])
    shown = f" · stores: {' + '.join(stores)}" if "team" in stores or "team" in result["failures"] else ""
    footer = f"profile {result['profile']} · legs: {legs}{shown} · {result['elapsed_ms']:.0f} ms"
    if result["failures"]:
        failed = "; ".join(failure_line(name, why) for name, why in result["failures"].items())
        if len(result["legs"]) < 2:
            answered = f"only the {legs} leg answered"
        elif "team" in result["failures"]:
            answered = "the local store alone answered"
        else:
            answered = "part of the search failed; the hits are what answered"
        footer += f"\nwarning: {answered} ({failed})"
    lines.append(footer)
    return "\n".join(lines)
