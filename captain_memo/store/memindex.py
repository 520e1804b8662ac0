"""An in-memory vector index over the store: a 1-bit coarse scan, then exact float32 rescoring.

Why: sqlite-vec 0.1.9 computes float32 distances without SIMD and picks its top k by selection
sort, ~70 ms a query at 150,000 chunks. Here every vector is also kept as one sign bit per
dimension (48 bytes at 384-d), stored word-major so a query's Hamming distance to every row is
six XOR + popcount passes over contiguous memory (0.6 ms at 150,000 rows, 5 ms at 1,000,000).
The rows nearest by that count (6% of the rows in scope, at least 1,000) are rescored exactly
from a float32 copy of the vectors, and the top k by exact L2 distance are returned with the same
similarity as ``SqliteVecIndex``: identical results whenever the true top k are among the
candidates (recall@10 against exact search is printed by ``captain-memo bench``).

sqlite-vec stays the store of record. The index is built from it (``vec0_rows``), rows grouped
by partition (the project, '' for personal notes) like vec0's own partitions, so a project's
query scans only its rows. Before each search it reads the ``vector_changes`` log (migration 2),
which triggers on ``chunks`` fill for every write by any process, and applies those changes:
removed rows are swapped out, current vectors are read back for the rest.

Memory: 1,596 bytes a row at 384-d (float32 vector, sign bits, id, squared norm) plus 8 bytes per
chunk id for the id lookup: ~240 MB at 150,000 chunks. Long-lived processes (the editor host)
opt in; one-shot commands keep ``SqliteVecIndex``, whose open-plus-first-query is faster than a build.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence

import numpy as np

from captain_memo.errors import StoreError
from captain_memo.store import vec0_rows
from captain_memo.store.search import Scope, SqliteVecIndex, similarity
from captain_memo.store.store import Store

log = logging.getLogger("captain_memo")

# Candidates rescored exactly: CANDIDATE_SHARE of the rows in scope, at least MIN_CANDIDATES and
# CANDIDATES_PER_RESULT per result asked for. The sign-bit order is coarse, rescoring is cheap (a
# gather and a product), so be generous. Synthetic stores, recall@10 project scope / all projects:
# at 150,000 chunks 0.992 / 1.000 rescoring 4% (1.0 / 4.6 ms), 0.996 / 1.000 with 6% (1.3 / 6.1 ms);
# at 1,000,000 chunks 0.988 / 1.000 with 4% (3.8 / 25.6 ms), 0.992 / 1.000 with 6% (4.7 / 34.4 ms).
# Real all-MiniLM-L6-v2 embeddings need fewer candidates than the synthetic ones for the same
# recall (0.989 against 0.959 with 160 of 17,091 rows: `captain-memo bench --real`), so these
# figures err low.
CANDIDATE_SHARE = 0.06
MIN_CANDIDATES = 1_000
CANDIDATES_PER_RESULT = 16
# A batch of changes this large (or a log pruned past our position) is cheaper as a rebuild.
REBUILD_CHANGES = 50_000
BUILD_BATCH = 65_536  # rows per step when computing sign bits at build time


def sign_bits(vectors: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """One bit per dimension, set where the vector lies above the centre: uint64 (rows, words)."""
    bits = np.packbits(vectors > centre, axis=1, bitorder="little")
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    return bits.view(np.uint64)


def nearest_counts(distances: np.ndarray, count: int, top: int) -> np.ndarray:
    """Positions of the ``count`` smallest of small non-negative integers (ties broken by position).

    A histogram finds the cut-off distance in one pass: 1.8 ms at a million rows, against 8 ms
    for ``argpartition``.
    """
    histogram = np.cumsum(np.bincount(distances, minlength=top + 1))
    cutoff = int(np.searchsorted(histogram, count))
    chosen = np.flatnonzero(distances <= cutoff)
    if len(chosen) > count:
        below = chosen[distances[chosen] < cutoff]
        at = chosen[distances[chosen] == cutoff][: count - len(below)]
        chosen = np.concatenate([below, at])
    return chosen


class _Block:
    """The rows of one partition: ids, sign bits (word-major), float32 vectors, squared norms."""

    def __init__(self, dim: int, words: int, capacity: int):
        self.dim, self.words, self.n = dim, words, 0
        self.ids = np.empty(capacity, np.int64)
        self.codes = np.empty((words, capacity), np.uint64)
        self.vectors = np.empty((capacity, dim), np.float32)
        self.sqnorms = np.empty(capacity, np.float32)

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + self.codes.nbytes + self.vectors.nbytes + self.sqnorms.nbytes

    def _reserve(self, rows: int) -> None:
        capacity = len(self.ids)
        if self.n + rows <= capacity:
            return
        capacity = max(self.n + rows, capacity + capacity // 4 + 1024)
        for name in ("ids", "vectors", "sqnorms"):
            old = getattr(self, name)
            new = np.empty((capacity, *old.shape[1:]), old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)
        codes = np.empty((self.words, capacity), np.uint64)
        codes[:, : self.n] = self.codes[:, : self.n]
        self.codes = codes

    def append(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add rows; their sign bits and norms come from ``derive``."""
        self._reserve(len(ids))
        self.ids[self.n : self.n + len(ids)] = ids
        self.vectors[self.n : self.n + len(ids)] = vectors
        self.n += len(ids)

    def derive(self, start: int, centre: np.ndarray) -> None:
        """Sign bits and squared norms of rows ``start`` onwards, a batch at a time."""
        for at in range(start, self.n, BUILD_BATCH):
            vectors = self.vectors[at : min(self.n, at + BUILD_BATCH)]
            self.sqnorms[at : at + len(vectors)] = np.einsum("ij,ij->i", vectors, vectors)
            self.codes[:, at : at + len(vectors)] = sign_bits(vectors, centre).T

    def remove(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Drop rows by moving the last live rows into their places; returns (moved ids, new rows)."""
        rows = np.unique(rows)
        kept = self.n - len(rows)
        holes = rows[rows < kept]
        movers = np.setdiff1d(np.arange(kept, self.n), rows, assume_unique=True)
        self.ids[holes] = self.ids[movers]
        self.vectors[holes] = self.vectors[movers]
        self.sqnorms[holes] = self.sqnorms[movers]
        self.codes[:, holes] = self.codes[:, movers]
        self.n = kept
        return self.ids[holes], holes

    def hamming(self, code: np.ndarray) -> np.ndarray:
        """Bits differing from ``code`` in every row: uint16 (n,)."""
        out = np.bitwise_count(self.codes[0, : self.n] ^ code[0]).astype(np.uint16)
        for word in range(1, self.words):
            out += np.bitwise_count(self.codes[word, : self.n] ^ code[word])
        return out

    def squared_distances(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        vectors = self.vectors[: self.n] if rows is None else self.vectors[rows]
        sqnorms = self.sqnorms[: self.n] if rows is None else self.sqnorms[rows]
        # einsum, not BLAS: OpenBLAS spreads a product this small over threads, which on two busy
        # cores took 19 ms for 1,600 rows instead of 0.2 ms.
        return sqnorms - 2.0 * np.einsum("ij,j->i", vectors, query) + float(query @ query)


class _Positions:
    """Where each chunk id lives: a dense array indexed by id (SQLite gives ids as max + 1, so it
    stays about as long as the number of chunks ever stored), holding block << 32 | row."""

    def __init__(self):
        self.where = np.full(0, -1, np.int64)

    def set(self, ids: np.ndarray, block: int, rows: np.ndarray) -> None:
        if len(ids) and int(ids.max()) >= len(self.where):
            grown = np.full(max(int(ids.max()) + 1, len(self.where) * 5 // 4), -1, np.int64)
            grown[: len(self.where)] = self.where
            self.where = grown
        self.where[ids] = (block << 32) | rows.astype(np.int64)

    def clear(self, ids: np.ndarray) -> None:
        ids = ids[(ids >= 0) & (ids < len(self.where))]
        self.where[ids] = -1

    def find(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(which of ids are indexed, their blocks, their rows)."""
        inside = (ids >= 0) & (ids < len(self.where))
        found = np.flatnonzero(inside)
        found = found[self.where[ids[found]] >= 0]
        codes = self.where[ids[found]]
        return found, codes >> 32, codes & 0xFFFFFFFF


class MemIndex:
    """Approximate KNN with exact rescoring, held in memory and kept in step with the store.

    Thread-safe; one lock serialises searches and refreshes (a search takes milliseconds).
    """

    def __init__(self, store: Store, candidate_share: float = CANDIDATE_SHARE, min_candidates: int = MIN_CANDIDATES):
        self.store = store
        self.candidate_share = candidate_share
        self.min_candidates = min_candidates
        self._lock = threading.RLock()
        self._fallback = SqliteVecIndex(store)
        self._ready = threading.Event()
        self._warming: threading.Thread | None = None
        self._closed = False
        self._reset(None, None, None)
        self.builds = 0  # full builds so far (tests and the bench read it)

    # -- state -------------------------------------------------------------------------

    def _reset(self, table: str | None, schema: int | None, dim: int | None) -> None:
        self._table, self._schema, self._dim = table, schema, dim
        self._blocks: list[_Block] = []
        self._block_of: dict[str, int] = {}
        self._positions = _Positions()
        self._cursor = 0
        self._centre = np.zeros(dim or 0, np.float32)
        self._words = math.ceil((dim or 0) / 64)
        self._rows_at_build = 0

    @property
    def size(self) -> int:
        return sum(b.n for b in self._blocks)

    @property
    def nbytes(self) -> int:
        """Memory held by the index's arrays."""
        return sum(b.nbytes for b in self._blocks) + self._positions.where.nbytes + self._centre.nbytes

    def close(self) -> None:
        """Drop the arrays. A build still running stops at its next storage chunk, and is waited
        for: it reads through the store's connection, and the store closing that connection under
        it crashed the process (a segmentation fault in SQLite, seen when a service reopened its
        store after a reindex while the index was still being built)."""
        self._closed = True
        warming = self._warming
        if warming is not None and warming is not threading.current_thread():
            warming.join()
        if self._lock.acquire(blocking=False):
            try:
                self._reset(None, None, None)
            finally:
                self._lock.release()

    # -- building and catching up ----------------------------------------------------------

    def warm_in_background(self) -> None:
        """Build on a thread; until it is done searches go to sqlite-vec, so nothing waits for it."""
        if self._warming is None:
            self._warming = threading.Thread(target=self._warm, name="captain-memo-memindex", daemon=True)
            self._warming.start()

    def _warm(self) -> None:
        try:
            with self._lock:
                self._sync()
        except Exception as exc:  # the fallback keeps answering; the next search retries the build
            if not self._closed:
                log.warning("in-memory vector index: build failed, searching sqlite-vec instead: %s", exc)
        finally:
            if self._closed:
                self._reset(None, None, None)
            self._ready.set()

    def _head(self, conn) -> tuple[int, str, int]:
        head, table, schema = conn.execute(
            "SELECT (SELECT max(seq) FROM vector_changes), (SELECT value FROM meta WHERE key = 'vec_table'),"
            " (SELECT schema_version FROM pragma_schema_version)"
        ).fetchone()
        return head or 0, table or "vec_chunks", schema

    def _sync(self) -> None:
        """Bring the index up to date with the database (caller holds the lock)."""
        if self._closed:
            raise StoreError("the in-memory vector index was closed")
        if not self.store.vec_available:
            raise StoreError(f"sqlite-vec is not available ({self.store.vec_error}); only keyword search works")
        conn = self.store.conn
        head, table, schema = self._head(conn)
        if (table, schema) != (self._table, self._schema):
            self._build(conn)
        elif head != self._cursor:
            self._catch_up(conn, head)

    def _snapshot(self, conn):
        """Run reads inside one read transaction (a consistent WAL snapshot) when none is open."""
        owner = not conn.in_transaction
        if owner:
            conn.execute("BEGIN")
        return owner

    def _build(self, conn) -> None:
        owner = self._snapshot(conn)
        try:
            head, table, schema = self._head(conn)
            dim = self.store.meta("embed_dim")
            self._reset(table, schema, int(dim) if dim else None)
            self._cursor = head
            if self._dim and self.store.table_exists(table):
                self._load(conn, table)
        finally:
            if owner:
                conn.execute("COMMIT")
        self._rows_at_build = self.size
        self.builds += 1

    def _load(self, conn, table: str) -> None:
        dim = self._dim
        assert dim is not None, "the dimension is known before rows are loaded (_reset)"
        if vec0_rows.layout_known(conn, table):
            chunks = vec0_rows.chunk_map(conn, table)
            per_scope: dict[str, int] = {}
            for chunk in chunks:
                per_scope[chunk.scope] = per_scope.get(chunk.scope, 0) + len(chunk.ids)
            for scope, n in per_scope.items():  # sized up front: the vectors are copied once
                self._block(scope, capacity=n + n // 16 + 256)
            for chunk in chunks:
                if self._closed:
                    raise StoreError("the in-memory vector index was closed while it was being built")
                slots = vec0_rows.chunk_vectors(conn, table, chunk.chunk_id, dim)
                self._blocks[self._block_of[chunk.scope]].append(chunk.ids, slots[chunk.offsets])
        else:
            for rows in vec0_rows.scan(conn, table, dim):
                if self._closed:
                    raise StoreError("the in-memory vector index was closed while it was being built")
                for scope in set(rows.scopes):
                    mask = np.array([s == scope for s in rows.scopes])
                    self._blocks[self._block(scope)].append(rows.ids[mask], rows.vectors[mask])
        total = self.size
        if total:
            sums = sum(b.vectors[: b.n].sum(axis=0, dtype=np.float64) for b in self._blocks)
            self._centre = (sums / total).astype(np.float32)
        for number, block in enumerate(self._blocks):
            block.derive(0, self._centre)
            self._positions.set(block.ids[: block.n], number, np.arange(block.n))

    def _block(self, scope: str, capacity: int = 1024) -> int:
        if scope not in self._block_of:
            self._block_of[scope] = len(self._blocks)
            assert self._dim is not None, "blocks are made after the dimension is known (_reset)"
            self._blocks.append(_Block(self._dim, self._words, capacity))
        return self._block_of[scope]

    def _add_rows(self, block: int, ids: np.ndarray, vectors: np.ndarray) -> None:
        target = self._blocks[block]
        start = target.n
        target.append(ids, vectors)
        target.derive(start, self._centre)
        self._positions.set(ids, block, np.arange(start, target.n))

    def _catch_up(self, conn, head: int) -> None:
        fresh = None
        owner = self._snapshot(conn)
        try:
            oldest = conn.execute("SELECT min(seq) FROM vector_changes").fetchone()[0]
            changed = [
                row[0]
                for row in conn.execute(
                    "SELECT DISTINCT chunk_id FROM vector_changes WHERE seq > ? AND seq <= ?", (self._cursor, head)
                )
            ]
            pruned = oldest is None or oldest > self._cursor + 1
            if pruned or len(changed) > REBUILD_CHANGES:
                rebuild = True
            else:
                rebuild = False
                dim = self.store.meta("embed_dim")
                if self._dim is None and dim:
                    self._reset(self._table, self._schema, int(dim))
                if self._dim and self._table is not None:
                    fresh = (
                        vec0_rows.read_rows(
                            conn, self._table, self._dim, changed, vec0_rows.layout_known(conn, self._table)
                        )
                        if self.store.table_exists(self._table)
                        else None
                    )
        finally:
            if owner:
                conn.execute("COMMIT")
        if rebuild:
            self._build(conn)
            return
        self._remove(np.array(changed, np.int64))
        if self._dim and fresh is not None:
            for scope in set(fresh.scopes):
                mask = np.array([s == scope for s in fresh.scopes])
                self._add_rows(self._block(scope), fresh.ids[mask], fresh.vectors[mask])
        self._cursor = head
        if self.size > 2 * max(self._rows_at_build, 1024):
            self._build(conn)  # the sign bits' centre was computed on half the rows or fewer: refresh it

    def _remove(self, ids: np.ndarray) -> None:
        found, blocks, rows = self._positions.find(ids)
        self._positions.clear(ids[found])
        for block in np.unique(blocks):
            moved_ids, moved_rows = self._blocks[block].remove(rows[blocks == block])
            self._positions.set(moved_ids, int(block), moved_rows)

    # -- searching ---------------------------------------------------------------------------

    def _query(self, query: np.ndarray) -> np.ndarray:
        query = np.asarray(query, np.float32).reshape(-1)
        if self._dim is not None and len(query) != self._dim:
            raise StoreError(f"the query vector has {len(query)} dimensions but the stored vectors have {self._dim}")
        return query

    @property
    def building(self) -> bool:
        """A background build is running (searches go to sqlite-vec meanwhile)."""
        return self._warming is not None and not self._ready.is_set()

    def _usable(self) -> bool:
        return not self.building

    def knn(self, query: np.ndarray, scope: Scope, k: int) -> dict[int, float]:
        """chunk id -> similarity for the k nearest chunks in scope."""
        if not self._usable():
            return self._fallback.knn(query, scope, k)
        with self._lock:
            self._sync()
            query = self._query(query)
            names = scope.partitions
            blocks = [self._blocks[i] for name, i in self._block_of.items() if names is None or name in names]
            blocks = [b for b in blocks if b.n]
            total = sum(b.n for b in blocks)
            if not total or k <= 0:
                return {}
            wanted = max(self.min_candidates, CANDIDATES_PER_RESULT * k, math.ceil(self.candidate_share * total))
            if wanted >= total:
                found: list[tuple[_Block, np.ndarray | None]] = [(b, None) for b in blocks]
            else:
                found = list(self._coarse(blocks, query, wanted))
            id_parts, squared_parts = [], []
            for block, rows in found:
                id_parts.append(block.ids[: block.n] if rows is None else block.ids[rows])
                squared_parts.append(block.squared_distances(query, rows))
            ids, squared = np.concatenate(id_parts), np.concatenate(squared_parts)
            top = np.argsort(squared)[:k] if len(squared) <= k else np.argpartition(squared, k)[:k]
            top = top[np.argsort(squared[top], kind="stable")]
            return {int(ids[i]): similarity(squared[i]) for i in top}

    def _coarse(self, blocks: list[_Block], query: np.ndarray, wanted: int) -> list[tuple[_Block, np.ndarray | None]]:
        code = sign_bits(query[None, :], self._centre)[0]
        distances = [b.hamming(code) for b in blocks]
        chosen = nearest_counts(np.concatenate(distances), wanted, self._words * 64)
        bounds = np.cumsum([0] + [len(d) for d in distances])
        return [(b, chosen[(chosen >= lo) & (chosen < hi)] - lo) for b, lo, hi in zip(blocks, bounds[:-1], bounds[1:])]

    def similarities(self, query: np.ndarray, chunk_ids: Sequence[int]) -> dict[int, float]:
        """Exact similarity of given chunks (chunks without a vector are left out)."""
        if not self._usable():
            return self._fallback.similarities(query, chunk_ids)
        if not len(chunk_ids):
            return {}
        with self._lock:
            self._sync()
            query = self._query(query)
            ids = np.asarray(chunk_ids, np.int64)
            found, blocks, rows = self._positions.find(ids)
            out = {}
            for block in np.unique(blocks):
                mine = blocks == block
                squared = self._blocks[block].squared_distances(query, rows[mine])
                out.update({int(i): similarity(d) for i, d in zip(ids[found[mine]], squared)})
            return out


def warm_memory_index(store: Store) -> MemIndex:
    """A MemIndex over ``store`` already building in the background (``Engine.open(index=...)``)."""
    index = MemIndex(store)
    index.warm_in_background()
    return index
