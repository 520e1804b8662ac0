"""Synthetic Captain Memo stores of any size, with vectors shaped like real sentence embeddings.

Uniform random vectors are a poor proxy: quantised search looks fine or collapses on them for
reasons real data does not share. These vectors are built to match what all-MiniLM-L6-v2 gives on
real text (measured on the pytest changelog corpus: mean vector norm 0.49, random pairs at cosine
0.24, participation ratio of the spectrum ~45, nearest neighbour at 0.71): a direction every vector
shares, 2,000 clusters of varied size and spread whose meaning varies in a 128-d subspace with a
decaying spectrum, and a little isotropic noise. At the same size, 1-bit quantisation finds the
true neighbours slightly less often on these than on the real ones, so recall figures err low.

Memories belong to projects (vec0 partitions) of Zipf-like sizes plus 5% personal notes; each
cluster is a topic of one project. Rows are written straight into the store's tables in large
transactions, project by project (vec0 inserts run at ~22,000 rows/s in partition order and
~1,400 rows/s interleaved), giving a valid store that ``captain-memo`` opens like any other.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from captain_memo.bench.text import Vocabulary, zipf_weights
from captain_memo.embeddings.local import DIM, MODEL_ID
from captain_memo.records import DAY, NewMemory, Source
from captain_memo.store import Store

BATCH = 20_000  # memories per transaction while building


@dataclass(frozen=True)
class Spec:
    chunks: int
    seed: int = 7
    dim: int = DIM
    clusters: int = 2_000
    rank: int = 128  # dimensions the meaning varies in
    decay: float = 0.7  # power-law decay of that subspace's spectrum
    shared: float = 0.5  # weight of the direction all vectors share
    noise: float = 0.35  # isotropic noise
    spread: tuple[float, float] = (0.3, 0.8)  # cluster spreads, drawn uniformly
    projects: int = 12
    personal_share: float = 0.05
    queries: int = 50
    near_share: float = 0.5  # queries aimed at one stored chunk; the rest at a topic in general
    years: float = 3.0


def unit_rows(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


class Space:
    """The clusters and how to sample vectors from them; everything follows from the spec's seed."""

    def __init__(self, spec: Spec):
        rng = np.random.default_rng([spec.seed, 1])
        self.spec = spec
        self.shared = unit_rows(rng.standard_normal(spec.dim))
        self.basis = np.linalg.qr(rng.standard_normal((spec.dim, spec.rank)))[0].astype(np.float32)
        scale = np.arange(1, spec.rank + 1) ** -spec.decay
        self.scale = np.sqrt(scale / scale.sum() * spec.rank).astype(np.float32)
        centres = (rng.standard_normal((spec.clusters, spec.rank)) * self.scale) @ self.basis.T / np.sqrt(spec.rank)
        self.centres = (spec.shared * self.shared + centres).astype(np.float32)
        weights = rng.pareto(1.5, spec.clusters) + 1
        self.weights = weights / weights.sum()
        self.spreads = rng.uniform(*spec.spread, spec.clusters).astype(np.float32)
        # Each cluster is a topic of one project; project sizes follow Zipf.
        self.project_of = rng.choice(spec.projects, size=spec.clusters, p=zipf_weights(spec.projects))

    def sample(self, rng: np.random.Generator, clusters: np.ndarray) -> np.ndarray:
        spec = self.spec
        local = (rng.standard_normal((len(clusters), spec.rank), dtype=np.float32) * self.scale) @ self.basis.T
        noise = rng.standard_normal((len(clusters), spec.dim), dtype=np.float32)
        x = (
            self.centres[clusters]
            + self.spreads[clusters, None] * local / np.sqrt(spec.rank)
            + spec.noise * noise / np.sqrt(spec.dim)
        )
        return unit_rows(x)

    def near(self, rng: np.random.Generator, vectors: np.ndarray) -> np.ndarray:
        """Queries aimed at given stored vectors: each moved by about as much as a paraphrase."""
        return unit_rows(vectors + 0.5 * rng.standard_normal(vectors.shape, dtype=np.float32) / np.sqrt(self.spec.dim))


def project_name(index: int) -> str:
    return f"project-{index:02d}"


@dataclass(frozen=True)
class QuerySet:
    """The bench's queries: text, vector and the project each is asked from."""

    texts: list[str]
    vectors: np.ndarray
    projects: list[str | None]

    def save(self, path: Path) -> None:
        np.save(path.with_suffix(".npy"), self.vectors)
        path.write_text(json.dumps({"texts": self.texts, "projects": self.projects}))

    @classmethod
    def load(cls, path: Path) -> QuerySet:
        meta = json.loads(path.read_text())
        return cls(meta["texts"], np.load(path.with_suffix(".npy")), meta["projects"])


@dataclass(frozen=True)
class BuildReport:
    chunks: int
    memories: int
    seconds: float
    bytes: int

    @property
    def rows_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds else 0.0


def sidecar(db: Path) -> tuple[Path, Path]:
    """Where a synthetic store keeps its spec and its queries."""
    return db.with_name(db.name + ".spec.json"), db.with_name(db.name + ".queries.json")


def build_store(db: Path, spec: Spec, progress=None) -> BuildReport:
    """Write a synthetic store of ``spec.chunks`` chunks to ``db`` (which must not exist)."""
    db = Path(db)
    if db.exists():
        raise FileExistsError(f"{db} exists; a synthetic store is only written to a new file")
    started = time.perf_counter()
    space, vocab = Space(spec), Vocabulary(spec.clusters, spec.seed)
    rng = np.random.default_rng([spec.seed, 2])
    # Memories of 1-3 chunks (1.3 on average); each memory's chunks share its cluster.
    per_memory = rng.choice([1, 2, 3], size=spec.chunks, p=(0.75, 0.18, 0.07))
    per_memory = per_memory[: int(np.searchsorted(np.cumsum(per_memory), spec.chunks)) + 1]
    per_memory[-1] -= int(per_memory.sum()) - spec.chunks
    clusters = rng.choice(spec.clusters, size=len(per_memory), p=space.weights)
    projects = space.project_of[clusters].astype(object)
    personal = rng.random(len(per_memory)) < spec.personal_share
    projects[personal] = None
    order = np.argsort([-1 if p is None else p for p in projects], kind="stable")  # partition order
    store = Store(db)
    store.bind_model(MODEL_ID, spec.dim)
    query_targets = set(rng.choice(len(per_memory), size=spec.queries, replace=False).tolist())
    targets: dict[int, tuple[np.ndarray, int]] = {}
    bar = progress(spec.chunks, f"building {spec.chunks:,} chunks") if progress else None
    now = time.time()
    try:
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            _write_batch(store, space, vocab, rng, batch, per_memory, clusters, projects, now, query_targets, targets)
            if bar is not None:
                bar.advance(int(per_memory[batch].sum()))
    finally:
        if bar is not None:
            bar.close()
    queries = _queries(spec, space, vocab, rng, targets, clusters, projects)
    store.checkpoint()
    store.close()
    report = BuildReport(spec.chunks, len(per_memory), time.perf_counter() - started, db.stat().st_size)
    spec_path, query_path = sidecar(db)
    queries.save(query_path)
    spec_path.write_text(json.dumps({"spec": asdict(spec), "build_rows_per_s": round(report.rows_per_second)}))
    return report


def _write_batch(store, space, vocab, rng, batch, per_memory, clusters, projects, now, query_targets, targets):
    chunk_counts = per_memory[batch].tolist()
    chunk_clusters = np.repeat(clusters[batch], chunk_counts)
    vectors = space.sample(rng, chunk_clusters)
    texts = vocab.chunks(rng, chunk_clusters)
    kinds = rng.choice(["memory", "observation", "skill"], size=len(batch), p=(0.6, 0.3, 0.1))
    created = now - rng.random(len(batch)) * space.spec.years * 365 * DAY
    branches = rng.choice(["main", "develop", "feature/a", "feature/b"], size=len(batch), p=(0.6, 0.2, 0.1, 0.1))
    loaded, at = [], 0
    for i, memory in enumerate(batch):
        project = projects[memory]
        project_name_ = None if project is None else project_name(int(project))
        title = vocab.title(rng, int(clusters[memory]))
        parts = [f"{title}\n{text}" for text in texts[at : at + chunk_counts[i]]]
        body = "\n\n".join(text for text in texts[at : at + chunk_counts[i]])
        new = NewMemory(
            body=body,
            kind=str(kinds[i]),
            title=title,
            project=project_name_,
            branch=str(branches[i]),
            source=Source(origin="import"),
            created_at=float(created[i]),
        )
        loaded.append((new, parts, vectors[at : at + chunk_counts[i]]))
        if int(memory) in query_targets:
            targets[int(memory)] = (vectors[at], int(clusters[memory]))
        at += chunk_counts[i]
    store.bulk_load(loaded)


def _queries(spec, space, vocab, rng, targets, clusters, projects) -> QuerySet:
    """Half the queries paraphrase one stored chunk, half ask about a topic in general; each is
    asked from the project its topic belongs to (personal notes: from no project)."""
    texts, vectors, where = [], [], []
    for n, memory in enumerate(sorted(targets)):
        vector, cluster = targets[memory]
        if n < spec.queries * spec.near_share:
            vectors.append(space.near(rng, vector[None, :])[0])
        else:
            vectors.append(space.sample(rng, np.array([cluster]))[0])
        text = vocab.query(rng, cluster)
        while text in texts:  # each query text stands for one vector
            text = vocab.query(rng, cluster)
        texts.append(text)
        where.append(None if projects[memory] is None else project_name(int(projects[memory])))
    return QuerySet(texts, np.stack(vectors), where)
