"""Load a BEIR-style set into a throwaway store through the normal indexing path and run every
query through ``Engine.recall``, once per method.

Memory-level results: recall returns the best chunk of each memory, and each memory is one
document, so a hit's memory id names the document it came from.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from captain_memo.base.progress import Progress
from captain_memo.config import PROFILES
from captain_memo.embeddings.base import query_vectors
from captain_memo.errors import RecallError
from captain_memo.evaluation import metrics
from captain_memo.evaluation.data import Dataset, Query
from captain_memo.evaluation.methods import Method
from captain_memo.ranking.query import analyse
from captain_memo.store.search import Scope

CUTOFF = 10
HIT_CUTOFF = 3  # hit@3: the answer among the first three, what a user reads before giving up
# A question no text answers is answered right when the recall says so: it names a name no memory
# holds (``RecallResult.unnamed``), or its best hit is farther in meaning than this cosine
# (all-MiniLM-L6-v2: unrelated texts sit at 0-0.15; doc/eval.md, "The whole-store set").
NO_MATCH_COSINE = 0.3
# Documents stored per remember_many call (one embedding call each; cached vectors cost nothing).
INDEX_BATCH = 256


@dataclass(frozen=True)
class Ranked:
    """One method's answer to one query."""

    docs: tuple[str, ...]
    ndcg: float
    recall: float
    mrr: float
    hit: float = 0.0  # hit@3; for a question no text answers, whether the recall said so


@dataclass(frozen=True)
class QueryOutcome:
    query: Query
    has_identifier: bool
    relevant: dict[str, int]
    pool_recall: float
    by_method: dict[str, Ranked]

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)


@dataclass(frozen=True)
class Summary:
    method: str
    subset: str  # all | identifier | plain
    n: int
    ndcg: float
    recall: float
    mrr: float
    pool_recall: float
    hit: float = 0.0


@dataclass
class SetResult:
    name: str
    docs: int
    chunks: int
    outcomes: list[QueryOutcome] = field(default_factory=list)

    def subsets(self) -> dict[str, list[QueryOutcome]]:
        """All answerable queries, those with and without an identifier, and each category."""
        answerable = [o for o in self.outcomes if o.answerable]
        out = {
            "all": answerable,
            "identifier": [o for o in answerable if o.has_identifier],
            "plain": [o for o in answerable if not o.has_identifier],
        }
        for category in dict.fromkeys(o.query.category for o in self.outcomes if o.query.category):
            out[category] = [o for o in self.outcomes if o.query.category == category]
        return out

    def summaries(self, methods: Sequence[str]) -> list[Summary]:
        out = []
        for subset, outcomes in self.subsets().items():
            if not outcomes:
                continue
            pool = metrics.mean([o.pool_recall for o in outcomes])
            for name in methods:
                ranked = [o.by_method[name] for o in outcomes]
                out.append(
                    Summary(
                        name,
                        subset,
                        len(outcomes),
                        metrics.mean([r.ndcg for r in ranked]),
                        metrics.mean([r.recall for r in ranked]),
                        metrics.mean([r.mrr for r in ranked]),
                        pool,
                        metrics.mean([r.hit for r in ranked]),
                    )
                )
        return out


def local_engine(folder: Path, embedder):
    """An engine over a new SQLite store in ``folder``."""
    from captain_memo.engine.core import Engine
    from captain_memo.store import Store

    return Engine(Store(folder / "eval.db"), embedder)


def team_engine(dsn: str, embedder):
    """An engine over the (new, empty) team database ``dsn``, searched as the engine searches any store."""
    from captain_memo.engine.core import Engine
    from captain_memo.store.postgres import TeamStore

    return Engine(TeamStore(dsn), embedder)


def build_store(dataset: Dataset, embedder, folder: Path, progress: bool = True, team_db: str | None = None):
    """An engine over a new store holding every document (SQLite in ``folder``, or the team
    database ``team_db``); returns (engine, memory id -> doc id)."""
    from captain_memo.records import NewMemory

    engine = team_engine(team_db, embedder) if team_db else local_engine(folder, embedder)
    doc_of: dict[int, str] = {}
    docs = [d for d in dataset.docs if (d.text or d.title).strip()]
    bar = Progress(len(docs), f"indexing {dataset.name}") if progress else None
    for start in range(0, len(docs), INDEX_BATCH):
        part = docs[start : start + INDEX_BATCH]
        memories = [
            NewMemory(body=d.text if d.text.strip() else d.title, title=d.title, kind="memory", project=d.group)
            for d in part
        ]
        ids = engine.remember_many(memories, skip_duplicates=False)
        doc_of.update({memory_id: d.id for memory_id, d in zip(ids, part) if memory_id is not None})
        if bar:
            bar.advance(len(part))
    if bar:
        bar.close()
    return engine, doc_of


def scope_args(dataset: Dataset, query: Query) -> dict:
    """A query searches only its group when both it and the documents carry one."""
    if dataset.grouped and query.group:
        return {"project": query.group}
    return {"all_projects": True} if dataset.grouped else {"project": None}


def said_no_match(result) -> bool:
    """Whether a recall answers "nothing here": a name no memory holds, or no hit close in meaning."""
    if result.unnamed:
        return True
    best = result.hits[0].vector if result.hits else None
    return best is None or 2.0 * best - 1.0 < NO_MATCH_COSINE


def run_query(
    engine, dataset: Dataset, query: Query, doc_of: dict[int, str], methods: Sequence[Method]
) -> QueryOutcome:
    relevant = dataset.qrels.get(query.id, {})
    where = scope_args(dataset, query)
    by_method = {}
    for method in methods:
        result = engine.recall(query.text, limit=CUTOFF, record=False, legs=method.legs, cfg=method.cfg, **where)
        if result.failures:  # a figure measured with a leg missing would be silently wrong
            raise RecallError(
                f"{dataset.name}, query {query.id}, {method.name}: "
                + "; ".join(f"{leg} leg failed: {why}" for leg, why in result.failures.items())
            )
        docs = tuple(doc_of.get(hit.memory.id, f"#{hit.memory.id}") for hit in result.hits)
        hit = metrics.recall_at(docs, relevant, HIT_CUTOFF) > 0 if relevant else said_no_match(result)
        by_method[method.name] = Ranked(
            docs,
            metrics.ndcg_at(docs, relevant, CUTOFF),
            metrics.recall_at(docs, relevant, CUTOFF),
            metrics.mrr_at(docs, relevant, CUTOFF),
            float(hit),
        )
    scope = Scope(where.get("project"), where.get("all_projects", False))
    pool, _, _ = engine.candidates(query.text, scope, PROFILES["v2"])
    pool_docs = {doc_of.get(c.memory.id, "") for c in pool}
    shape = analyse(query.text)
    return QueryOutcome(query, shape.has_identifier, relevant, metrics.pool_recall(pool_docs, relevant), by_method)


def evaluate(
    dataset: Dataset,
    embedder,
    methods: Sequence[Method],
    progress: bool = True,
    workdir: Path | None = None,
    on_query: Callable[[QueryOutcome], None] | None = None,
    team_db: str | None = None,
    build: Callable | None = None,
) -> SetResult:
    """Every query of ``dataset`` through every method, in a store that is deleted afterwards:
    a SQLite file, or with ``team_db`` (a postgresql:// URL whose role may create databases) a
    database made on that server for the run. A built-in set passes ``build`` instead
    (evaluation/flask_store.py): it makes the store in the folder and returns (engine, memory id ->
    label, the dataset)."""
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="captain-memo-eval-", dir=workdir))
        if team_db:
            from captain_memo.store.postgres.scratch import scratch_database

            team_db = stack.enter_context(scratch_database(team_db))
        if build is not None:
            engine, doc_of, dataset = build(embedder, Path(tmp), progress)
        else:
            engine, doc_of = build_store(dataset, embedder, Path(tmp), progress, team_db)
        try:
            # The queries' vectors in one call, so an uncached set embeds them in batches too.
            query_vectors(engine.embedder, [q.text for q in dataset.queries])
            chunks = engine.store.chunk_count()
            result = SetResult(dataset.name, len(set(doc_of.values())), chunks)
            bar = Progress(len(dataset.queries), f"querying {dataset.name}") if progress else None
            for query in dataset.queries:
                outcome = run_query(engine, dataset, query, doc_of, methods)
                result.outcomes.append(outcome)
                if on_query:
                    on_query(outcome)
                if bar:
                    bar.advance()
            if bar:
                bar.close()
        finally:
            engine.close()
    return result
