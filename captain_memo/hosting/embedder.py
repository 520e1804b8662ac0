"""Vectors for a command that embeds many texts in its own process (`index`, `import`), asked of
the engine that serves its store.

Such a command is not a request the engine answers: it reads files or commits and writes the
store itself. Embedding its texts in its own process loaded a second model beside the engine's,
and the two fought over the cores the engine's recalls need (doc/benchmarks.md section 15). So
while an engine serves the store with the model the command would load itself, the command asks
it for the vectors (the ``embed`` request): the engine embeds them slice by slice behind its
recalls (embeddings/reads_first.py). Anything else, and the command embeds in its own process as before:

- nothing serves the store, the service is switched off, or the engine embeds with another model
  (vectors of two models never mix in a store): from the start, saying nothing;
- the engine stops answering, dies, steps down or refuses: from that request on, said once on
  stderr. The command stores what it embedded either way, so nothing is lost or stored twice.
"""

from __future__ import annotations

import base64
import os
import sys

import numpy as np

from captain_memo.base import runtime_folder
from captain_memo.errors import CaptainMemoError, EmbeddingError, ModelMismatchError
from captain_memo.hosting import client

# Texts per request: 8 of the local model's batches (texts sorted by length, so each request's
# batches are those this process would have made: the vectors are the ones it would compute).
REQUEST_TEXTS = 64
REQUEST_CHARS = 500_000  # the engine takes 1,000,000 characters a request (fields.EMBED_FIELDS)


def served(db: str | os.PathLike, own, env=None, say=None):
    """``own`` (the embedder this command would use) asking the engine serving ``db`` first, or
    None when no engine serves it now or the service is switched off."""
    env = os.environ if env is None else env
    if not runtime_folder.enabled(env):
        return None
    try:
        path = runtime_folder.socket_path(db, env)
        if not runtime_folder.check_socket(path):
            return None
    except (OSError, runtime_folder.UnsafeRuntimeError):
        return None
    return ServedEmbedder(own, path, env, say)


class ServedEmbedder:
    """The embedder interface (embeddings/base.py) over the engine's ``embed`` request, falling
    back to ``own`` for good once the engine cannot be used; the rest is ``own``'s."""

    def __init__(self, own, path, env=None, say=None):
        self.own = own
        self.model_id = own.model_id
        self.path = path
        self.env = os.environ if env is None else env
        self.say = say or _print
        self.asked = 0  # requests the engine answered
        self.serving = True

    def __getattr__(self, name: str):  # expect_dim, close...: the command's own embedder's
        return getattr(self.own, name)

    def __repr__(self) -> str:
        return f"ServedEmbedder({self.own!r}, {str(self.path)!r})"

    @property
    def dim(self) -> int:
        return self.own.dim

    def embed(self, texts):
        if not texts:
            return self.own.embed(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        ranked = [texts[i] for i in order]
        parts, done = [], 0
        while done < len(ranked):
            batch = _next_batch(ranked, done)
            vectors = self._asked(batch) if self.serving else None
            if vectors is None:  # the rest here, batched as the engine would have
                parts.append(self.own.embed(ranked[done:]))
                break
            parts.append(vectors)
            done += len(batch)
        vectors = np.concatenate(parts) if len(parts) > 1 else parts[0]
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    def embed_queries(self, texts):  # search queries: none in an index, so this process's own
        return getattr(self.own, "embed_queries", self.own.embed)(texts)

    def _asked(self, batch: list[str]):
        """The engine's vectors for ``batch``, or None (and no more asking) when it cannot give them."""
        request = {"texts": batch, "model": self.model_id}
        try:
            answer = client.ask(self.path, "embed", request, client.deadline("embed", request, self.env))
            vectors = _decoded(answer, len(batch), self.model_id)
        except client.NotServed as exc:
            # Gone before it took the first request: as if the command had found no engine.
            quiet = exc.gone and not exc.taken and not self.asked
            return self._stop(None if quiet else f"the engine serving the store stopped answering ({exc})")
        except ModelMismatchError:
            return self._stop(None)
        except EmbeddingError:  # its provider failed: this process's own would fail the same way
            raise
        except (CaptainMemoError, OSError, ValueError) as exc:
            return self._stop(f"the engine serving the store could not embed ({exc})")
        self.asked += 1
        return vectors

    def _stop(self, reason: str | None) -> None:
        self.serving = False
        if reason is not None:
            self.say(f"{reason}; embedding in this process from here")
        return None


def _next_batch(ranked: list[str], start: int) -> list[str]:
    batch: list[str] = []
    chars = 0
    for text in ranked[start : start + REQUEST_TEXTS]:
        if batch and chars + len(text) > REQUEST_CHARS:
            break
        batch.append(text)
        chars += len(text)
    return batch


def _decoded(answer, count: int, model: str) -> np.ndarray:
    """The vectors of an ``embed`` answer; ValueError when it is not ``count`` sound vectors of ``model``."""
    if not isinstance(answer, dict) or not isinstance(answer.get("vectors"), str):
        raise ValueError("its answer holds no vectors")
    if answer.get("model") != model:
        raise ValueError("its answer holds vectors of another model")
    dim = answer.get("dim")
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
        raise ValueError("its answer names no dimension")
    raw = base64.b64decode(answer["vectors"], validate=True)
    if len(raw) != count * dim * 4:
        raise ValueError(f"its answer holds {len(raw)} bytes, not {count} vectors of {dim} dimensions")
    rows = np.frombuffer(raw, dtype="<f4").reshape(count, dim).astype(np.float32)  # a writable copy
    # Checked, not scaled again: they are the engine's model's unit vectors, bit for bit.
    norms = np.linalg.norm(rows, axis=1) if np.isfinite(rows).all() else None
    if norms is None or (np.abs(norms - 1) > 1e-3).any():
        raise ValueError("its answer holds vectors that are not of unit length")
    return rows


def _print(message: str) -> None:
    print(f"captain-memo: {message}", file=sys.stderr)
