"""Reading stored vectors back out of a sqlite-vec vec0 table in bulk, to build an in-memory index.

Through the virtual table every row is a point lookup: ``SELECT rowid, scope, embedding`` over
150,000 rows took 6 s (0.6 ms a row). Underneath, vec0 keeps plain tables: ``<t>_chunks`` (per
chunk of up to 1,024 rows: the partition value, a validity bitmap and the rowids) and
``<t>_vector_chunks00`` (the chunk's vectors as one float32 blob). Reading those directly takes
well under a second at 150,000 rows. The layout is sqlite-vec 0.1's (the version is pinned in
pyproject.toml); a table that does not look exactly like it is read through the virtual table.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

BATCH = 500  # rowids per IN (...) list, well under SQLite's variable limit


@dataclass(frozen=True)
class VecChunk:
    """One vec0 storage chunk: its live rows' ids and their offsets inside the vectors blob."""

    chunk_id: int
    scope: str
    ids: np.ndarray  # int64 rowids of the live rows
    offsets: np.ndarray  # their positions in the chunk


@dataclass(frozen=True)
class Rows:
    """Vectors of some rows with the partition each belongs to."""

    ids: np.ndarray  # int64
    scopes: list[str]
    vectors: np.ndarray  # float32 (n, dim)


def _columns(conn, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}


def layout_known(conn, table: str) -> bool:
    """True when ``table`` is stored as sqlite-vec 0.1 stores one vector column and one partition key."""
    chunks = _columns(conn, f"{table}_chunks")
    return (
        {"chunk_id", "size", "validity", "rowids", "partition00"} <= chunks
        and "partition01" not in chunks
        and {"rowid", "chunk_id", "chunk_offset"} <= _columns(conn, f"{table}_rowids")
        and {"rowid", "vectors"} <= _columns(conn, f"{table}_vector_chunks00")
        and not _columns(conn, f"{table}_vector_chunks01")
    )


def _live(validity: bytes, rowids: bytes, size: int) -> tuple[np.ndarray, np.ndarray]:
    valid = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[:size].astype(bool)
    offsets = np.flatnonzero(valid)
    return np.frombuffer(rowids, np.int64)[:size][offsets].copy(), offsets


def chunk_map(conn, table: str) -> list[VecChunk]:
    """Every storage chunk with its live rows (a few MB even at a million rows; no vectors read)."""
    out = []
    for chunk_id, size, scope, validity, rowids in conn.execute(
        f'SELECT chunk_id, size, partition00, validity, rowids FROM "{table}_chunks" ORDER BY chunk_id'
    ):
        ids, offsets = _live(validity, rowids, size)
        if len(ids):
            out.append(VecChunk(chunk_id, scope or "", ids, offsets))
    return out


def chunk_vectors(conn, table: str, chunk_id: int, dim: int) -> np.ndarray:
    """All vector slots of one storage chunk (live or not), float32 (size, dim)."""
    row = conn.execute(f'SELECT vectors FROM "{table}_vector_chunks00" WHERE rowid = ?', (chunk_id,)).fetchone()
    blob = np.frombuffer(row[0], np.float32)
    return blob.reshape(len(blob) // dim, dim)


def scan(conn, table: str, dim: int, batch: int = 4096) -> Iterator[Rows]:
    """Every row through the virtual table: slow, for layouts this module does not know."""
    cur = conn.execute(f'SELECT rowid, scope, embedding FROM "{table}"')
    while rows := cur.fetchmany(batch):
        yield _rows(rows, dim)


def read_rows(conn, table: str, dim: int, ids: Sequence[int], known_layout: bool) -> Rows:
    """Current vectors of the given rowids; ids without a stored vector are left out."""
    ids = [int(i) for i in ids]
    if not known_layout:
        rows = []
        for start in range(0, len(ids), BATCH):
            part = ids[start : start + BATCH]
            rows += conn.execute(
                f'SELECT rowid, scope, embedding FROM "{table}" WHERE rowid IN ({",".join("?" * len(part))})', part
            ).fetchall()
        return _rows(rows, dim)
    by_chunk: dict[int, list[tuple[int, int]]] = {}
    for start in range(0, len(ids), BATCH):
        part = ids[start : start + BATCH]
        for rowid, chunk_id, offset in conn.execute(
            f'SELECT rowid, chunk_id, chunk_offset FROM "{table}_rowids" WHERE rowid IN ({",".join("?" * len(part))})',
            part,
        ):
            if chunk_id is not None:
                by_chunk.setdefault(chunk_id, []).append((rowid, offset))
    found_ids, scopes, vectors = [], [], []
    for chunk_id, wanted in by_chunk.items():
        meta = conn.execute(
            f'SELECT size, partition00, validity, rowids FROM "{table}_chunks" WHERE chunk_id = ?', (chunk_id,)
        ).fetchone()
        if meta is None:
            continue
        live = dict(zip(*(a.tolist() for a in _live(meta[2], meta[3], meta[0]))))
        slots = chunk_vectors(conn, table, chunk_id, dim)
        for rowid, offset in wanted:
            if live.get(rowid) == offset:  # the slot still holds this row
                found_ids.append(rowid)
                scopes.append(meta[1] or "")
                vectors.append(slots[offset])
    return Rows(np.array(found_ids, np.int64), scopes, np.array(vectors, np.float32).reshape(len(found_ids), dim))


def _rows(rows: list, dim: int) -> Rows:
    return Rows(
        np.array([r[0] for r in rows], np.int64),
        [r[1] or "" for r in rows],
        np.frombuffer(b"".join(r[2] for r in rows), np.float32).reshape(len(rows), dim),
    )
