"""The interface every embedding provider implements, and the checks every vector passes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from captain_memo.errors import EmbeddingError


class Embedder(Protocol):
    """Turns texts into unit vectors of one model.

    ``model_id`` names the model and provider family (``local:all-MiniLM-L6-v2-int8``,
    ``ollama:nomic-embed-text``); the store records it so vectors of two models never mix.
    ``embed`` returns a float32 array of shape (len(texts), dim) whose rows have unit length,
    or raises EmbeddingError naming the endpoint, the model and what went wrong. It embeds
    documents; ``embed_queries`` embeds search queries, which some models want prefixed otherwise
    (embeddings/prefixes.py). An embedder without it embeds both alike: see ``query_vectors``.
    """

    model_id: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


def query_vectors(embedder, texts: Sequence[str]) -> np.ndarray:
    """The vectors of search queries: through ``embed_queries`` where the embedder tells queries
    from documents, else through ``embed``."""
    embed_queries = getattr(embedder, "embed_queries", None)
    return embed_queries(texts) if embed_queries is not None else embedder.embed(texts)


def checked_unit_vectors(rows, dim: int | None, where: str) -> np.ndarray:
    """Validate raw vectors (right dimension, finite, non-zero) and scale them to unit length.

    Some servers return unnormalised vectors; the ranker's ``1 - d²/4`` similarity needs unit ones.
    """
    try:
        arr = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{where}: vectors are not numeric ({exc})") from None
    if arr.ndim != 2:
        raise EmbeddingError(f"{where}: expected a list of vectors, got shape {arr.shape}")
    if dim is not None and arr.shape[1] != dim:
        raise EmbeddingError(f"{where}: vectors have dimension {arr.shape[1]}, expected {dim}")
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"{where}: vectors contain NaN or infinite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EmbeddingError(f"{where}: a vector has zero length")
    return arr / norms
