"""`captain-memo bench` on a tiny store: the synthetic store is a valid store and every figure is there.

Figures are printed, never asserted: speed belongs to the benchmark, not to the tests.
"""

from __future__ import annotations

import json

import numpy as np

from captain_memo.bench.synth import QuerySet, Spec, build_store, sidecar
from captain_memo.cli.main import main
from captain_memo.embeddings.local import MODEL_ID
from captain_memo.store import Store


def test_a_synthetic_store_is_a_valid_store(tmp_path):
    db = tmp_path / "synthetic.db"
    report = build_store(db, Spec(400, queries=50))
    store = Store(db)
    counts = store.counts()
    assert counts["chunks"] == counts["fts_rows"] == counts["vectors"] == 400 == report.chunks
    assert counts["pending_vectors"] == 0 and counts["memories"] == report.memories
    assert store.meta("embed_model") == MODEL_ID and store.meta("embed_dim") == "384"
    orphans = store.conn.execute(
        "SELECT count(*) FROM chunks c LEFT JOIN memories m ON m.id = c.memory_id WHERE m.id IS NULL"
    ).fetchone()[0]
    assert orphans == 0
    projects = {p for (p,) in store.conn.execute("SELECT DISTINCT project FROM memories")}
    assert None in projects and len(projects) > 3  # personal notes and several projects (partitions)
    queries = QuerySet.load(sidecar(db)[1])
    assert len(set(queries.texts)) == 50 and queries.vectors.shape == (50, 384)
    assert np.allclose(np.linalg.norm(queries.vectors, axis=1), 1.0, atol=1e-5)
    vectors = np.frombuffer(
        b"".join(r[0] for r in store.conn.execute("SELECT embedding FROM vec_chunks")), np.float32
    ).reshape(-1, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    store.close()


def test_the_same_spec_builds_the_same_store(tmp_path):
    build_store(tmp_path / "a.db", Spec(200, queries=50))
    build_store(tmp_path / "b.db", Spec(200, queries=50))
    a, b = Store(tmp_path / "a.db"), Store(tmp_path / "b.db")
    rows = "SELECT c.id, c.text, m.project FROM chunks c JOIN memories m ON m.id = c.memory_id ORDER BY c.id"
    assert a.conn.execute(rows).fetchall() == b.conn.execute(rows).fetchall()
    assert QuerySet.load(sidecar(tmp_path / "a.db")[1]).texts == QuerySet.load(sidecar(tmp_path / "b.db")[1]).texts


def test_bench_command_reports_every_figure(tmp_path, capsys):
    out = tmp_path / "bench.md"
    assert (
        main(["bench", "--sizes", "300", "--no-embed", "--json", "--dir", str(tmp_path / "stores"), "--out", str(out)])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    (result,) = report["results"]
    assert result["chunks"] == 300 and result["queries"] == 50
    for key in (
        "memindex_project",
        "memindex_all",
        "sqlite_vec_project",
        "sqlite_vec_all",
        "keyword",
        "recall_cached_memindex",
        "recall_cached_sqlite",
    ):
        assert result[key]["n"] == 50 and 0 < result[key]["p50"] <= result[key]["p95"]
    # 300 rows: every candidate is rescored, so the in-memory index is exact here.
    assert result["memindex_project_recall10"] == result["memindex_all_recall10"] == 1.0
    assert result["memindex_builds"] == 1 and result["add_rows_per_s"] > 0 and result["db_mb"] > 0
    assert "| vector leg, in-memory index, project scope" in out.read_text()
    assert not list((tmp_path / "stores").glob("*.db"))  # not kept without --keep


def test_bench_refuses_bad_sizes(capsys):
    assert main(["bench", "--sizes", "ten"]) == 1
    assert "--sizes" in capsys.readouterr().err
    assert main(["bench", "--sizes", "50"]) == 1
    assert main(["bench", "--sizes", "1000", "--queries", "10"]) == 1
