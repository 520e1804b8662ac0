#!/usr/bin/env python3
"""Write an identifier-only query set over a BEIR-style corpus, for `captain-memo eval`.

    python scripts/identifier_queries.py ../shared/evaldata/pytest_changelog /tmp/identifiers
    captain-memo eval --data /tmp/identifiers --no-ablations

Each query is one code-shaped name found in the corpus (`tmp_path_factory`, `PYTEST_ADDOPTS`,
`pytest.approx`: the engine's own code-shape rule, 4+ characters) and nothing else; its relevant
documents are those holding that name as a whole token. Names held by more than MAX_DOCS documents
are left out (a name in 40 notes has no answer worth ranking). Which names become queries is
decided by a hash of the name, not by how any method ranks them. The corpus is copied into OUT
beside the queries, so the folder is a complete set; it is read from the evaluation data at run
time and written outside the project.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from captain_memo.ranking.query import is_code_shaped  # noqa: E402

# A dotted or plain name: what a developer types when searching for a function, setting or class.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
MIN_LENGTH = 4
MAX_DOCS = 8


def names_of(text: str) -> set[str]:
    return {name for name in NAME.findall(text) if len(name) >= MIN_LENGTH and is_code_shaped(name)}


def build(corpus: list[dict], count: int) -> tuple[list[dict], list[tuple[str, str]]]:
    held = {str(doc["id"]): names_of(doc.get("text", "")) for doc in corpus}
    spread = Counter(name for names in held.values() for name in names)
    chosen = sorted(
        (name for name, docs in spread.items() if docs <= MAX_DOCS),
        key=lambda name: hashlib.sha1(name.encode()).hexdigest(),
    )[:count]
    queries, qrels = [], []
    for number, name in enumerate(chosen):
        qid = f"id{number:03d}"
        queries.append({"id": qid, "text": name})
        qrels += [(qid, doc) for doc, names in held.items() if name in names]
    return queries, qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a BEIR-style folder (its corpus.jsonl is read)")
    parser.add_argument("out", type=Path, help="folder to write corpus.jsonl, queries.jsonl, qrels.tsv into")
    parser.add_argument("--count", type=int, default=300, help="how many names become queries (default 300)")
    args = parser.parse_args()
    lines = (args.corpus / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    corpus = [json.loads(line) for line in lines if line.strip()]
    queries, qrels = build(corpus, args.count)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (args.out / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    rows = "".join(f"{qid}\t{doc}\t1\n" for qid, doc in qrels)
    (args.out / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")
    print(f"{len(queries)} identifier-only queries, {len(qrels)} relevant pairs, written to {args.out}")


if __name__ == "__main__":
    main()
