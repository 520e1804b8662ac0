"""Re-embedding every chunk with the current model: in batches, resumable, never mixing two models.

How it stays consistent when killed at any point (kill -9 included):
1. The target is recorded first, in one transaction: a new vec0 table name and the new model in
   meta (``reindex_table``, ``reindex_model``), and the bookkeeping table ``reindex_chunks`` emptied.
2. Each batch is embedded outside any transaction, then written in one: its vectors go into the
   target table, and ``reindex_chunks`` records which text (hash and scope) each chunk had. Recall
   keeps using the live table and the old model all along; the target is invisible to it.
3. When every chunk is in the target with its current text, one transaction swaps meta
   (``vec_table``, ``embed_model``, ``embed_dim``), marks every chunk as having a vector, drops the
   old table and empties the bookkeeping. Chunks added, edited or deleted meanwhile by another process are
   caught by that check, which runs under the write lock.
A rerun finds the recorded target and embeds only what ``reindex_chunks`` lacks. Before the swap
the store is wholly the old model, after it wholly the new one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from captain_memo.errors import EmbeddingError, StoreError
from captain_memo.store.db import checked_dim, create_vec_table, vector_blob
from captain_memo.store.lock import reindex_lock
from captain_memo.store.store import Store

log = logging.getLogger("captain_memo")

DONE_TABLE = "reindex_chunks"
TARGET_KEYS = ("reindex_table", "reindex_model", "reindex_dim")
TABLE_NAMES = ["vec_chunks"] + [f"vec_chunks_{n}" for n in range(2, 100)]
# Each sweep embeds what the previous one found missing; writers elsewhere can only add a few
# chunks per sweep, so a handful of sweeps always converges.
MAX_SWEEPS = 20
# A chunk still to embed: not recorded, or recorded with another text or another scope.
TODO_FROM = (
    " FROM chunks c JOIN memories m ON m.id = c.memory_id"
    f" LEFT JOIN {DONE_TABLE} r ON r.chunk_id = c.id"
    " WHERE c.id > ? AND (r.chunk_id IS NULL OR r.content_hash != c.content_hash OR r.scope != ifnull(m.project, ''))"
)
TODO_SQL = "SELECT c.id, c.text, c.content_hash, ifnull(m.project, '')" + TODO_FROM + " ORDER BY c.id LIMIT ?"
TODO_COUNT_SQL = "SELECT count(*)" + TODO_FROM


@dataclass(frozen=True)
class ReindexReport:
    model: str
    dim: int | None  # None when the store held no chunk
    previous_model: str | None
    chunks: int  # chunks in the store when it finished
    embedded: int  # chunks this run embedded
    resumed: bool  # it continued an interrupted run
    seconds: float

    @property
    def prefixes_changed(self) -> bool:
        """The same model, with other query or document prefixes: a model id's prefixes follow its
        name after " [" (embeddings/prefixes.py)."""
        if not self.previous_model or self.previous_model == self.model:
            return False
        return self.previous_model.split(" [", 1)[0] == self.model.split(" [", 1)[0]


class ProgressBar(Protocol):
    def advance(self, n: int) -> None: ...

    def close(self) -> None: ...


ProgressFactory = Callable[[int, str], ProgressBar]  # (total, label) -> a bar (progress.Progress)


def pending_target(store: Store) -> tuple[str, str] | None:
    """(table, model) of an interrupted reindex, or None."""
    table, model = store.meta("reindex_table"), store.meta("reindex_model")
    return (table, model) if table and model else None


def reindex(
    store: Store, embedder, batch_size: int = 64, progress: ProgressFactory | None = None, restart: bool = False
) -> ReindexReport:
    """Re-embed every chunk with ``embedder`` and make its model the store's; resumes an
    interrupted run for the same model (``restart`` discards it instead). Only one reindex runs per
    store: another one meanwhile raises ReindexRunningError (store/lock.py)."""
    store.require_writable()  # the lock file beside a read-only store cannot be made either
    _require_vec(store)
    with reindex_lock(store.path):
        return _reindex(store, embedder, batch_size, progress, restart)


def _reindex(store: Store, embedder, batch_size: int, progress: ProgressFactory | None, restart: bool) -> ReindexReport:
    started = time.perf_counter()
    model = embedder.model_id
    previous = store.meta("embed_model")
    target, resumed = _begin(store, model, restart)
    total = _count(store, "SELECT count(*) FROM chunks")
    bar = progress(total, f"re-embedding with {model}") if progress else None
    if bar is not None:
        bar.advance(total - _todo_count(store))
    embedded = 0
    try:
        for _ in range(MAX_SWEEPS):
            after = 0
            while batch := store.conn.execute(TODO_SQL, (after, max(1, batch_size))).fetchall():
                vectors = embedder.embed([text for _, text, _, _ in batch])
                if len(vectors) != len(batch):
                    raise EmbeddingError(f"{model} returned {len(vectors)} vectors for {len(batch)} texts")
                _write_batch(store, target, model, batch, vectors)
                embedded += len(batch)
                after = batch[-1][0]
                if bar is not None:
                    bar.advance(len(batch))
            if _swap(store, target, model):
                break
        else:
            raise StoreError("the store kept changing while re-embedding; run `captain-memo reindex` again")
    finally:
        if bar is not None:
            bar.close()
    dim = store.meta("embed_dim")
    return ReindexReport(
        model,
        int(dim) if dim else None,
        previous,
        _count(store, "SELECT count(*) FROM chunks"),
        embedded,
        resumed,
        time.perf_counter() - started,
    )


def fill_missing(store: Store, embedder, batch_size: int = 64, progress: ProgressFactory | None = None) -> int:
    """Embed only chunks stored without a vector (saved while the endpoint was down), with the
    store's own model; returns how many got one."""
    store.require_writable()  # before the lock file is made or a batch embedded for nothing
    _require_vec(store)
    store.check_model(embedder.model_id)
    with reindex_lock(store.path):
        return _fill_missing(store, embedder, batch_size, progress)


def _fill_missing(store: Store, embedder, batch_size: int, progress: ProgressFactory | None) -> int:
    bar = (
        progress(
            _count(store, "SELECT count(*) FROM chunks WHERE has_vector = 0"),
            f"embedding missing vectors with {embedder.model_id}",
        )
        if progress
        else None
    )
    filled = 0
    try:
        while pending := store.pending_chunks(max(1, batch_size)):
            vectors = embedder.embed([text for _, text in pending])
            store.bind_model(embedder.model_id, int(vectors.shape[1]))
            store.set_vectors([chunk_id for chunk_id, _ in pending], vectors)
            filled += len(pending)
            if bar is not None:
                bar.advance(len(pending))
    finally:
        if bar is not None:
            bar.close()
    return filled


# -- the steps ------------------------------------------------------------------------------


def _require_vec(store: Store) -> None:
    if not store.vec_available:
        raise StoreError(f"sqlite-vec is not available ({store.vec_error}); vectors cannot be stored")


def _count(store: Store, sql: str) -> int:
    return store.conn.execute(sql).fetchone()[0]


def _todo_count(store: Store) -> int:
    return store.conn.execute(TODO_COUNT_SQL, (0,)).fetchone()[0]


def _begin(store: Store, model: str, restart: bool) -> tuple[str, bool]:
    """The target table to fill and whether it continues an interrupted run."""
    with store.write() as conn:
        pending = pending_target(store)
        if pending is not None:
            table, pending_model = pending
            if pending_model == model and not restart:
                return table, True
            log.warning("discarding an unfinished reindex to %s; starting over with %s", pending_model, model)
            _discard(store, conn, table)
        live = store.vec_table
        table = next(name for name in TABLE_NAMES if name != live and not store.table_exists(name))
        store.set_meta(conn, "reindex_table", table)
        store.set_meta(conn, "reindex_model", model)
        conn.execute(f"DELETE FROM {DONE_TABLE}")  # the table itself is made by a migration (store/db.py)
        return table, False


def _discard(store: Store, conn, table: str) -> None:
    if store.table_exists(table) and table != store.vec_table:
        conn.execute(f"DROP TABLE {table}")
    conn.execute(f"DELETE FROM {DONE_TABLE}")
    conn.execute(f"DELETE FROM meta WHERE key IN ({','.join('?' * len(TARGET_KEYS))})", TARGET_KEYS)


def _write_batch(store: Store, target: str, model: str, batch, vectors) -> None:
    dim = checked_dim(model, int(vectors.shape[1]))
    with store.write() as conn:
        recorded = store.meta("reindex_dim")
        if recorded is None:
            create_vec_table(conn, target, dim)
            store.set_meta(conn, "reindex_dim", str(dim))
        elif int(recorded) != dim:
            raise EmbeddingError(
                f"{model} now returns {dim}-d vectors, but the unfinished reindex holds {recorded}-d ones; "
                "run `captain-memo reindex --restart`"
            )
        for (chunk_id, _, digest, scope), vector in zip(batch, vectors):
            conn.execute(f"DELETE FROM {target} WHERE rowid = ?", (chunk_id,))
            conn.execute(
                f"INSERT INTO {target} (rowid, scope, embedding) VALUES (?, ?, ?)",
                (chunk_id, scope, vector_blob(vector)),
            )
            conn.execute(
                f"INSERT INTO {DONE_TABLE} (chunk_id, content_hash, scope) VALUES (?, ?, ?)"
                " ON CONFLICT(chunk_id) DO UPDATE SET content_hash = excluded.content_hash,"
                " scope = excluded.scope",
                (chunk_id, digest, scope),
            )


def _swap(store: Store, target: str, model: str) -> bool:
    """Make the target live in one transaction; False when chunks arrived or changed meanwhile."""
    with store.write() as conn:
        if conn.execute(TODO_SQL, (0, 1)).fetchone() is not None:
            return False
        deleted = [
            row[0]
            for row in conn.execute(
                f"SELECT r.chunk_id FROM {DONE_TABLE} r LEFT JOIN chunks c ON c.id = r.chunk_id WHERE c.id IS NULL"
            )
        ]
        dim = store.meta("reindex_dim")
        old = store.vec_table
        if dim is not None:
            for chunk_id in deleted:
                conn.execute(f"DELETE FROM {target} WHERE rowid = ?", (chunk_id,))
            store.set_meta(conn, "vec_table", target)
            store.set_meta(conn, "embed_model", model)
            store.set_meta(conn, "embed_dim", dim)
            conn.execute("UPDATE chunks SET has_vector = 1 WHERE has_vector = 0")
        else:
            # No chunk at all: the store is left unbound, and the next vectors bind it to their model.
            conn.execute("DELETE FROM meta WHERE key IN ('embed_model', 'embed_dim')")
        if old != target and store.table_exists(old):
            conn.execute(f"DROP TABLE {old}")
        conn.execute(f"DELETE FROM {DONE_TABLE}")
        conn.execute(f"DELETE FROM meta WHERE key IN ({','.join('?' * len(TARGET_KEYS))})", TARGET_KEYS)
    return True
