"""The in-memory vector index against sqlite-vec's exact search, on real stores.

Writes come through a second Store on the same file, as another process's would: the index only
learns of them from the database.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from captain_memo.config import rank_config
from captain_memo.engine.core import Engine
from captain_memo.errors import StoreError
from captain_memo.store import NewMemory, Store, vec0_rows
from captain_memo.store.db import create_vec_table
from captain_memo.store.memindex import MemIndex, nearest_counts, sign_bits
from captain_memo.store.search import Scope, SqliteVecIndex

DIM = 48
PROJECTS = ("alpha", "beta", None)
SCOPES = (Scope("alpha"), Scope("beta"), Scope(None), Scope("nowhere"), Scope(all_projects=True))


class Clusters:
    """Unit vectors around a dozen centres, reproducible."""

    def __init__(self, seed: int = 3, dim: int = DIM):
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.standard_normal((12, dim))
        self.dim = dim

    def __call__(self, n: int = 1) -> np.ndarray:
        x = self.centres[self.rng.integers(12, size=n)] + 0.6 * self.rng.standard_normal((n, self.dim))
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def vectors():
    return Clusters()


def fill(store: Store, vectors: Clusters, memories: int = 90, chunks: int = 4) -> list[int]:
    store.bind_model("test:clusters", DIM)
    ids = []
    for i in range(memories):
        texts = [f"note {i} part {j}" for j in range(chunks)]
        ids.append(store.add(NewMemory(body=" ".join(texts), project=PROJECTS[i % 3]), texts, vectors(chunks)))
    return ids


@pytest.fixture
def store(db_file, vectors):
    s = Store(db_file)
    fill(s, vectors)
    yield s
    s.close()


@pytest.fixture
def other(db_file, store):
    """Another connection to the same file, standing for another process."""
    s = Store(db_file)
    yield s
    s.close()


def assert_same(found: dict, exact: dict) -> None:
    assert list(found) == list(exact)
    for chunk_id, similarity in exact.items():
        assert found[chunk_id] == pytest.approx(similarity, abs=1e-5)


def test_exact_when_every_row_is_rescored(store, vectors):
    index, exact = MemIndex(store), SqliteVecIndex(store)
    for query in vectors(6):
        for scope in SCOPES:
            for k in (1, 10, 25, 500):
                assert_same(index.knn(query, scope, k), exact.knn(query, scope, k))
    assert index.size == 360 and index.builds == 1


def test_coarse_scan_keeps_the_true_neighbours(store, vectors):
    # 80 candidates of 360 rows: the sign-bit scan must put nearly all true top 5 among them.
    index, exact = MemIndex(store, candidate_share=0.0, min_candidates=16), SqliteVecIndex(store)
    overlap = []
    for query in vectors(30):
        found, truth = index.knn(query, Scope(all_projects=True), 5), exact.knn(query, Scope(all_projects=True), 5)
        overlap.append(len(set(found) & set(truth)) / 5)
        for chunk_id, similarity in found.items():  # rescoring is exact whatever the candidates
            assert similarity == pytest.approx(index.similarities(query, [chunk_id])[chunk_id], abs=1e-6)
        assert list(found.values()) == sorted(found.values(), reverse=True)
    assert np.mean(overlap) >= 0.9


def test_a_project_sees_itself_and_personal_notes_only(store, vectors):
    index = MemIndex(store)
    projects = dict(store.conn.execute("SELECT c.id, m.project FROM chunks c JOIN memories m ON m.id = c.memory_id"))
    for query in vectors(3):
        assert {projects[c] for c in index.knn(query, Scope("alpha"), 500)} == {"alpha", None}
        assert {projects[c] for c in index.knn(query, Scope(None), 500)} == {None}
        assert {projects[c] for c in index.knn(query, Scope(all_projects=True), 500)} == {"alpha", "beta", None}


def test_keeps_up_with_another_connections_writes(store, other, vectors):
    index, exact = MemIndex(store), SqliteVecIndex(store)
    query = vectors(1)[0]

    def check():
        for scope in SCOPES:
            assert_same(index.knn(query, scope, 40), exact.knn(query, scope, 40))

    check()
    other.add(NewMemory(body="new alpha note", project="alpha"), ["new alpha note"], query[None, :])
    check()
    assert next(iter(index.knn(query, Scope("alpha"), 1).values())) == pytest.approx(1.0)
    for memory_id in (1, 2, 5):
        other.delete(memory_id)
    check()
    other.replace_body(4, NewMemory(body="rewritten", project="alpha"), ["rewritten a", "rewritten b"], vectors(2))
    check()
    late = other.add(NewMemory(body="stored while the model was down", project="beta"), ["pending"], None)
    check()
    pending = [chunk_id for chunk_id, _ in other.pending_chunks()]
    other.set_vectors(pending, vectors(len(pending)))
    check()
    assert set(pending) <= set(index.knn(query, Scope("beta"), 500))
    other.delete(late)
    check()
    assert index.builds == 1  # every change above was applied incrementally
    assert index.size == exact.store.counts()["vectors"]


def test_a_freed_vec0_slot_reused_by_another_row(store, other, vectors):
    index = MemIndex(store)
    index.knn(vectors(1)[0], Scope("beta"), 5)
    victim = other.chunks_of(2)[0].id  # beta
    other.delete(2)
    replacement = vectors(1)
    new = other.add(NewMemory(body="took the slot", project="beta"), ["took the slot"], replacement)
    new_chunk = other.chunks_of(new)[0].id
    found = index.knn(replacement[0], Scope("beta"), 3)
    assert victim not in found and next(iter(found)) == new_chunk
    assert victim not in index.similarities(replacement[0], [victim, new_chunk])


def test_rebuilds_when_the_change_log_no_longer_reaches_back(store, other, vectors):
    index, exact = MemIndex(store), SqliteVecIndex(store)
    query = vectors(1)[0]
    index.knn(query, Scope("alpha"), 5)
    other.add(NewMemory(body="after the build", project="alpha"), ["after the build"], query[None, :])
    with other.write() as conn:  # what the pruning trigger does to entries 100,000 changes old
        conn.execute("DELETE FROM vector_changes")
    assert_same(index.knn(query, Scope("alpha"), 20), exact.knn(query, Scope("alpha"), 20))
    assert index.builds == 2


def test_follows_a_swap_to_another_vector_table(store, other, vectors):
    index = MemIndex(store)
    query = vectors(1)[0]
    index.knn(query, Scope(all_projects=True), 5)
    ids = [row[0] for row in other.conn.execute("SELECT id FROM chunks ORDER BY id")]
    with other.write() as conn:
        create_vec_table(conn, "vec_chunks_2", DIM)
    replaced = vectors(len(ids))
    replaced[7] = query
    other.set_vectors(ids, replaced, table="vec_chunks_2")
    with other.write() as conn:  # as a finished reindex does
        other.set_meta(conn, "vec_table", "vec_chunks_2")
    found = index.knn(query, Scope(all_projects=True), 1)
    assert list(found) == [ids[7]] and index.builds == 2


def test_similarities_match_sqlite_vec(store, vectors):
    index, exact = MemIndex(store), SqliteVecIndex(store)
    query = vectors(1)[0]
    ids = [1, 5, 17, 360, 361, 9999, -3]
    assert index.similarities(query, ids).keys() == exact.similarities(query, ids).keys() == {1, 5, 17, 360}
    for chunk_id, similarity in exact.similarities(query, ids).items():
        assert index.similarities(query, ids)[chunk_id] == pytest.approx(similarity, abs=1e-5)
    assert index.similarities(query, []) == {}


def test_bulk_reader_agrees_with_the_virtual_table(store, other, vectors):
    other.delete(3)  # leaves holes in vec0's storage chunks
    conn, table = store.conn, store.vec_table
    assert vec0_rows.layout_known(conn, table)
    bulk = {}
    for chunk in vec0_rows.chunk_map(conn, table):
        slots = vec0_rows.chunk_vectors(conn, table, chunk.chunk_id, DIM)
        for chunk_id, offset in zip(chunk.ids, chunk.offsets):
            bulk[int(chunk_id)] = (chunk.scope, slots[offset])
    slow = {}
    for rows in vec0_rows.scan(conn, table, DIM):
        slow.update({int(i): (s, v) for i, s, v in zip(rows.ids, rows.scopes, rows.vectors)})
    assert bulk.keys() == slow.keys() and len(bulk) == 356
    assert all(bulk[i][0] == slow[i][0] and np.array_equal(bulk[i][1], slow[i][1]) for i in bulk)
    wanted = [1, 2, 9, 10, 11, 12, 200, 4242]
    fast, plain = (vec0_rows.read_rows(conn, table, DIM, wanted, known) for known in (True, False))
    assert sorted(fast.ids.tolist()) == sorted(plain.ids.tolist()) == [1, 2, 200]
    for i, chunk_id in enumerate(fast.ids):
        j = plain.ids.tolist().index(chunk_id)
        assert fast.scopes[i] == plain.scopes[j] and np.array_equal(fast.vectors[i], plain.vectors[j])


def test_engine_ranks_the_same_with_either_index(db_file, hash_embedder):
    engine = Engine(Store(db_file), hash_embedder)
    for i in range(40):
        engine.remember(
            NewMemory(
                body=f"invoice {i} rounding rule {i % 7} for contract prices {'x' * i}",
                project=("billing", None)[i % 2],
            )
        )
    memory = Engine(engine.store, hash_embedder, vector_index=MemIndex(engine.store))
    everything = replace(rank_config(), candidates_per_leg=100)
    for query in ("invoice rounding", "contract prices rule 3", "nothing like it"):
        # Every chunk in scope a candidate of both legs, so ties (these notes are much alike) cannot
        # be cut differently.
        a = engine.recall(query, project="billing", limit=100, record=False, cfg=everything)
        b = memory.recall(query, project="billing", limit=100, record=False, cfg=everything)
        assert a.hits and {h.chunk_id: h.score for h in a.hits} == pytest.approx(
            {h.chunk_id: h.score for h in b.hits}, abs=1e-6
        )
    engine.close()


def test_open_builds_in_the_background_and_answers_meanwhile(db_file, hash_embedder):
    first = Engine(Store(db_file), hash_embedder)
    first.remember(NewMemory(body="gapless invoice numbers", project="billing"))
    first.close()
    from captain_memo.store.memindex import warm_memory_index

    engine = Engine.open(db_file, hash_embedder, index=warm_memory_index)
    assert isinstance(engine.index, MemIndex)
    assert engine.recall("gapless invoice numbers", project="billing", record=False).hits  # built or not
    assert engine.index._ready.wait(10)
    assert engine.index.size == 1
    engine.close()
    assert engine.index.nbytes == 0


def test_a_query_of_the_wrong_size_is_refused(store, vectors):
    with pytest.raises(StoreError, match="dimensions"):
        MemIndex(store).knn(np.ones(DIM + 1, np.float32), Scope(all_projects=True), 3)


def test_an_empty_store_answers_nothing(db_file, vectors):
    s = Store(db_file)
    index = MemIndex(s)
    assert index.knn(vectors(1)[0], Scope(all_projects=True), 5) == {}
    fill(s, vectors, memories=3, chunks=1)
    assert len(index.knn(vectors(1)[0], Scope(all_projects=True), 5)) == 3
    s.close()


def test_nearest_counts_takes_exactly_the_smallest():
    rng = np.random.default_rng(5)
    for _ in range(50):
        distances = rng.integers(0, 30, size=int(rng.integers(1, 400))).astype(np.uint16)
        count = int(rng.integers(1, len(distances) + 1))
        chosen = nearest_counts(distances, count, 64)
        assert len(chosen) == count == len(set(chosen.tolist()))
        assert distances[chosen].max() <= np.sort(distances)[count - 1]


def test_sign_bits_pad_to_whole_words():
    vectors = np.array([[1, -1, 1] + [0.5] * 67, [-1] * 70], np.float32)
    bits = sign_bits(vectors, np.zeros(70, np.float32))
    assert bits.shape == (2, 2) and bits.dtype == np.uint64
    assert int(bits[0, 0]) & 0b111 == 0b101 and int(bits[1, 0]) == 0 and int(bits[0, 1]) == 0b111111


def test_a_vec0_layout_it_does_not_know_is_read_through_the_virtual_table(store, other, vectors, monkeypatch):
    monkeypatch.setattr(vec0_rows, "layout_known", lambda conn, table: False)  # as a future sqlite-vec might
    index, exact = MemIndex(store), SqliteVecIndex(store)
    query = vectors(1)[0]
    for scope in SCOPES:
        assert_same(index.knn(query, scope, 30), exact.knn(query, scope, 30))
    other.delete(6)
    other.add(NewMemory(body="later", project="beta"), ["later"], query[None, :])
    assert_same(index.knn(query, Scope("beta"), 30), exact.knn(query, Scope("beta"), 30))
    assert index.builds == 1


def test_closing_waits_for_a_build_under_way_before_the_store_can_close(store):
    """The build reads through the store's connection; closing the store while it still read
    crashed the process (a segmentation fault, 1 run in 8 of a service reopening its store). The
    build is held at the index's lock here, so it is surely under way when close is called."""
    import threading

    index = MemIndex(store)
    index._lock.acquire()
    index.warm_in_background()
    build_alive_after_close: list[bool] = []

    def close() -> None:
        index.close()
        build_alive_after_close.append(index._warming.is_alive())

    closer = threading.Thread(target=close)
    closer.start()
    closer.join(timeout=1)  # before: close returned at once, the build still waiting to read
    index._lock.release()
    closer.join()
    assert build_alive_after_close == [False], "close returned while the build could still read the store"
