#!/usr/bin/env python3
"""Write a code-search set from Python's standard library, for `captain-memo eval`.

    python scripts/code_queries.py /tmp/codeset
    captain-memo eval --data /tmp/codeset --no-ablations

Built the way CodeSearchNet builds its sets: each document is a function of the standard library
of the Python running this script (the modules in its top folder and one folder down; tests left
out) with its docstring removed; a query is the first line of a docstring, and its one relevant
document is that function. Functions are kept when their name does not start with "__", their
docstring's first line has 4+ words, and the rest is 3+ lines and under 3,000 characters. Which
functions become documents, and which of those become queries, is decided by a hash of the
function's place (module, name, line), not by how any method ranks them. Nothing is copied from the
evaluation data; the set is written outside the project.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import sysconfig
import textwrap
from pathlib import Path

MIN_SUMMARY_WORDS = 4
MIN_LINES = 3
MAX_CHARS = 3000


def sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def modules(lib: Path) -> list[Path]:
    found = sorted(lib.glob("*.py")) + sorted(lib.glob("*/*.py"))
    return [p for p in found if not any(part.startswith("test") for part in p.relative_to(lib).parts)]


def functions(path: Path) -> list[tuple[str, str, str]]:
    """(place, docstring summary, function without its docstring) for each function kept."""
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []
    lines = source.splitlines()
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("__"):
            continue
        doc = ast.get_docstring(node)
        if not doc or node.end_lineno is None:
            continue
        summary = doc.strip().splitlines()[0].strip()
        body = node.body[0]
        first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1  # from the first "@"
        text = textwrap.dedent("\n".join(lines[first : body.lineno - 1] + lines[body.end_lineno : node.end_lineno]))
        if len(summary.split()) >= MIN_SUMMARY_WORDS and len(text.splitlines()) >= MIN_LINES and len(text) < MAX_CHARS:
            found.append((f"{path.stem}.{node.name}.{node.lineno}", summary, text))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write corpus.jsonl, queries.jsonl, qrels.tsv into")
    parser.add_argument("--docs", type=int, default=4000, help="how many functions become documents (default 4000)")
    parser.add_argument("--queries", type=int, default=400, help="at most this many queries (default 400)")
    args = parser.parse_args()
    lib = Path(sysconfig.get_paths()["stdlib"])
    every = sorted((f for path in modules(lib) for f in functions(path)), key=lambda f: sha(f[0]))
    docs = every[: args.docs]
    asked = [f for f in docs if sha("q" + f[0]) < "2"][: args.queries]  # one in eight, by hash
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "corpus.jsonl", "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"id": place, "text": text}) + "\n" for place, _, text in docs)
    with open(args.out / "queries.jsonl", "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"id": f"q{i:03d}", "text": s}) + "\n" for i, (_, s, _) in enumerate(asked))
    rows = "".join(f"q{i:03d}\t{place}\t1\n" for i, (place, _, _) in enumerate(asked))
    (args.out / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")
    print(f"{len(docs)} functions of {lib}, {len(asked)} queries, written to {args.out}")


if __name__ == "__main__":
    main()
