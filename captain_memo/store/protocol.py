"""What the engine, ``Memo``, the team client and the sources ask of a store, whichever it is.

Two stores answer it: ``Store`` (store/store.py, one SQLite file) and ``TeamStore``
(store/postgres/, a team's PostgreSQL database). Each module of theirs says, in a block mypy reads
and Python does not run, that its class satisfies ``MemoryStore``: a member one of them lacks, or a
signature that drifts apart, fails the type check. A feature only one store has is still a member:
the other answers it with nothing (``schema_version`` None, ``touched_paths`` None, ``time_limit`` no
bound), so callers ask the store instead of probing it with ``hasattr``.

This module imports no store, so either may import it without a circle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from captain_memo.records import Chunk, Memory, NewMemory, Superseded
    from captain_memo.store.sync import Stored
    from captain_memo.store.touched import TouchedPaths


@dataclass(frozen=True)
class Scope:
    """Which memories a search may return: one project plus personal notes, or everything."""

    project: str | None = None
    all_projects: bool = False

    @property
    def partitions(self) -> tuple[str, ...] | None:
        """vec0 partition values to search, or None for all."""
        if self.all_projects:
            return None
        return ("",) if not self.project else (self.project, "")


class VectorIndex(Protocol):
    """Nearest chunks to a query vector, within a scope; what the vector leg searches."""

    def knn(self, query: np.ndarray, scope: Scope, k: int) -> dict[int, float]:
        """chunk id -> similarity for the k nearest chunks in scope."""
        ...

    def similarities(self, query: np.ndarray, chunk_ids: Sequence[int]) -> dict[int, float]:
        """Exact similarity of given chunks (chunks without a vector are left out)."""
        ...

    def close(self) -> None: ...


class MemoryStore(Protocol):
    """A store of memories, their chunks, keyword rows and vectors; every write one transaction."""

    initial_stability: float  # Tide's stability for a new memory, set by the engine

    # -- what it is and whether it may be written --------------------------------------------

    @property
    def path(self) -> Path | str:
        """What messages name: the file, or the masked connection string."""
        ...

    @property
    def read_only(self) -> bool: ...

    @property
    def read_only_reason(self) -> str | None: ...

    @property
    def checks_model_at_open(self) -> bool:
        """Whether the engine refuses another embedder when it opens the store (the team store
        answers from its keywords instead)."""
        ...

    @property
    def vec_available(self) -> bool: ...

    @property
    def vec_table(self) -> str: ...

    def require_writable(self) -> None: ...

    def check_writable(self) -> None: ...

    def schema_version(self) -> int | None:
        """The newest migration applied."""
        ...

    def meta(self, key: str, default: str | None = None) -> str | None: ...

    def check_model(self, model_id: str) -> None: ...

    def bind_model(self, model_id: str, dim: int) -> None: ...

    def table_exists(self, name: str) -> bool: ...

    def checkpoint(self) -> None: ...

    def close(self) -> None: ...

    # -- a remote store's time and grants (a local file has neither) -------------------------

    def time_limit(self, seconds: float | None) -> AbstractContextManager[None]:
        """Statements run meanwhile are bounded by ``seconds``."""
        ...

    def cancel(self) -> None:
        """Cancel the statements running now (their caller stopped waiting)."""
        ...

    def grant_problem(self, project: str | None, all_projects: bool = False) -> str | None:
        """Why this user sees nothing of ``project``; None when it may."""
        ...

    # -- writing ---------------------------------------------------------------------------

    def add(
        self, memory: NewMemory, chunks: Sequence[str], vectors: np.ndarray | None, now: float | None = None
    ) -> int: ...

    def add_many(
        self, items: Sequence[tuple[NewMemory, Sequence[str], np.ndarray | None]], now: float | None = None
    ) -> list[int]: ...

    def replace_body(
        self, memory_id: int, memory: NewMemory, chunks: Sequence[str], vectors: np.ndarray | None
    ) -> None: ...

    def delete(self, memory_id: int) -> None: ...

    def set_vectors(self, chunk_ids: Sequence[int], vectors: np.ndarray, table: str | None = None) -> None: ...

    def set_superseded(self, old_id: int, new_id: int | None, automatic: bool = False) -> int | None: ...

    def record_surfacing(
        self, updates: Iterable[tuple[int, float]], now: float, opened: bool = False, patient: bool = True
    ) -> None: ...

    # -- rows indexed from sources, rewritten in place (store/sync.py) -----------------------

    def stored_by_key(self, project: str | None, prefix: str) -> dict[str, Stored]: ...

    def bodies(self, ids: Sequence[int]) -> dict[int, str]: ...

    def chunk_hashes(self, memory_id: int) -> set[str]: ...

    def update_place(self, memory_id: int, memory: NewMemory) -> None: ...

    def rewrite(
        self, memory_id: int, memory: NewMemory, chunks: Sequence[str], vectors: Mapping[str, np.ndarray] | None
    ) -> int: ...

    def file_states(self, project: str | None) -> dict[str, tuple[str, int]]: ...

    def save_file_states(
        self, project: str | None, states: Mapping[str, tuple[str, int]], dropped: Sequence[str]
    ) -> None: ...

    # -- reading ---------------------------------------------------------------------------

    def get(self, memory_id: int) -> Memory: ...

    def find_by_hash(self, digest: str, project: str | None) -> int | None: ...

    def find_by_source_key(self, source_key: str, project: str | None) -> Memory | None: ...

    def missing_vectors(self, memory_id: int) -> int: ...

    def chunks_of(self, memory_id: int) -> list[Chunk]: ...

    def chunk_rows(self, chunk_ids: Sequence[int]) -> dict[int, tuple[str, Memory]]: ...

    def list_memories(
        self, project: str | None = None, all_projects: bool = True, kind: str | None = None, limit: int = 100
    ) -> list[Memory]: ...

    def superseded(self) -> list[Superseded]: ...

    def first_chunks(self, memory_ids: Sequence[int]) -> dict[int, str]: ...

    def current_observations_like(self, memory: Memory, pattern: str) -> list[tuple[int, str, str]]: ...

    def pending_chunks(self, limit: int = 256) -> list[tuple[int, str]]: ...

    def sample_vectors(self, count: int) -> list[tuple[int, str, np.ndarray]]: ...

    def pending_count(self) -> int: ...

    def chunk_count(self) -> int: ...

    def memory_count(self) -> int: ...

    def counts(self) -> dict[str, int]: ...

    # -- searching (store/search.py's legs hand their work to the store) ---------------------

    def keyword_leg(self, match: str | None, scope: Scope, k: int) -> dict[int, float]:
        """bm25 top k in scope: chunk id -> relevance (higher is better)."""
        ...

    def keyword_scores(self, match: str | None, chunk_ids: Sequence[int]) -> dict[int, float]:
        """bm25 relevance of given chunks over the whole index (non-matching ones left out)."""
        ...

    def curated_keyword_leg(self, match: str | None, scope: Scope, k: int) -> dict[int, float] | None:
        """bm25 top k of curated text in scope, scored with curated text's own statistics; None when
        the store keeps no such statistics (a read-only local store not migrated)."""
        ...

    def curated_keyword_scores(self, match: str | None, chunk_ids: Sequence[int]) -> dict[int, float] | None:
        """bm25 relevance of the curated ones of given chunks with curated text's own statistics;
        None when the store keeps no such statistics."""
        ...

    def phrase_rows_up_to(self, phrase: str, cap: int) -> int:
        """How many chunks hold ``phrase``, counting no further than ``cap``."""
        ...

    def observation_chunks(self, chunk_ids: Sequence[int]) -> set[int]:
        """Those of ``chunk_ids`` that are part of an observation (the keyword leg's kinds)."""
        ...

    def chunk_estimate(self) -> int:
        """About how many chunks a search reads, found without counting them."""
        ...

    def newest_matching(self, topic: tuple[str | None, str | None], scope: Scope, k: int) -> list[int]:
        """Chunk ids of the k newest observations in scope matching a temporal query's topic."""
        ...

    def exact_index(self) -> VectorIndex:
        """The store's own exact vector index (sqlite-vec, pgvector)."""
        ...

    def touched_paths(self) -> TouchedPaths | None:
        """The paths each commit touched (change questions read them); None for a store keeping none."""
        ...
