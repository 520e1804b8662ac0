"""Loading generated memories into a team store in bulk, for benchmarks (the owner's methods)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import numpy as np

from captain_memo.base.chunking import content_hash
from captain_memo.records import NewMemory
from captain_memo.store.postgres.vectors import vector_text

if TYPE_CHECKING:
    from captain_memo.store.postgres.terms import Tokenizer


class BulkLoad:
    """Mixed into ``TeamStore``, which supplies ``write``, ``tokenizer``, ``require_bound`` and
    ``initial_stability``."""

    if TYPE_CHECKING:
        tokenizer: Tokenizer
        initial_stability: float

        def write(self) -> AbstractContextManager: ...

        def require_bound(self) -> None: ...

    def bulk_load(
        self, memories: Sequence[tuple[NewMemory, Sequence[str], np.ndarray]], without_index: bool = False
    ) -> None:
        """Many memories with their chunks and vectors in one transaction of COPYs, for generated
        benchmark stores: every chunk gets a vector, no duplicate check. The owner's method (it sets
        the id sequences). Each row also goes into the HNSW index (2,000 rows of 8 dimensions: 0.3 s
        without it, 2-5 s with it, on a loaded 2-core machine); ``without_index`` drops the index
        for the load: build it afterwards with ``build_vector_index``."""
        if not memories:
            return
        self.require_bound()
        tokens = iter(self.tokenizer.tokens([text for _, texts, _ in memories for text in texts]))
        with self.write() as conn:
            conn.execute("LOCK TABLE memories, chunks IN EXCLUSIVE MODE")
            if without_index:
                conn.execute("DROP INDEX IF EXISTS chunks_embedding")
            first_memory, first_chunk = conn.execute(
                "SELECT (SELECT coalesce(max(id), 0) FROM memories) + 1, (SELECT coalesce(max(id), 0) FROM chunks) + 1"
            ).fetchone()
            chunk_id = first_chunk
            cursor = conn.cursor()
            with cursor.copy(
                "COPY memories (id, kind, title, body, created_at, updated_at, project, branch, content_hash,"
                " stability, origin) FROM STDIN"
            ) as copy:
                for i, (memory, _, _) in enumerate(memories):
                    created = memory.created_at or time.time()
                    copy.write_row(
                        (
                            first_memory + i,
                            memory.kind,
                            memory.title,
                            memory.body,
                            created,
                            created,
                            memory.project or "",
                            memory.branch,
                            content_hash(memory.kind, memory.title, memory.body),
                            self.initial_stability,
                            memory.source.origin,
                        )
                    )
            with cursor.copy(
                "COPY chunks (id, memory_id, project, seq, text, content_hash, terms, embedding) FROM STDIN"
            ) as copy:
                for i, (memory, texts, vectors) in enumerate(memories):
                    for seq, text in enumerate(texts):
                        row = (first_memory + i, memory.project or "", seq, text, content_hash(text), next(tokens))
                        copy.write_row((chunk_id, *row, vector_text(vectors[seq])))
                        chunk_id += 1
            for table in ("memories", "chunks"):
                conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")

    def build_vector_index(self, options: str = "") -> None:
        """(Re)build the HNSW index over the vectors (the owner's method); ``options`` are pgvector's
        index parameters, e.g. ``m = 16, ef_construction = 64`` (its defaults)."""
        with self.write() as conn:
            conn.execute("DROP INDEX IF EXISTS chunks_embedding")
            with_options = f" WITH ({options})" if options else ""
            conn.execute(f"CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_l2_ops){with_options}")
