"""Whether the live vector table holds vectors of the recorded model only (for `doctor`).

A vector does not say which model made it, so a sample of chunks is embedded again with the
recorded model and compared with what is stored. The same model gives back the same direction
(cosine above 0.999 for the int8 local model, whose batches differ only in padding); two models,
even of the same dimension, agree no better than chance (|cosine| below 0.3 measured between the
local model and the hash embedder of the tests). A table of which a sixth is another model's is
caught by 24 samples with a probability of 1 - (5/6)^24 = 98.7%; half and half, all but surely.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAMPLE = 24
SAME_MODEL = 0.95  # cosine: at or above it the stored vector is the recorded model's


@dataclass(frozen=True)
class Audit:
    ok: bool
    detail: str


def audit_vectors(store, embedder, sample: int = SAMPLE) -> Audit:
    """Embed ``sample`` chunks spread over the store again and compare with their stored vectors."""
    model = store.meta("embed_model")
    if model is None or not store.vec_available or not store.table_exists(store.vec_table):
        return Audit(True, "no vectors stored yet")
    if embedder.model_id != model:
        return Audit(True, f"not checked: the vectors are {model}'s, the configured embedder is {embedder.model_id}")
    rows = store.sample_vectors(sample)
    if not rows:
        return Audit(True, "no vectors stored yet")
    fresh = embedder.embed([text for _, text, _ in rows])
    stored = np.stack([vector for _, _, vector in rows])
    agreement = np.sum(fresh * stored, axis=1) / np.maximum(np.linalg.norm(stored, axis=1), 1e-12)
    strangers = [chunk_id for (chunk_id, _, _), cosine in zip(rows, agreement) if cosine < SAME_MODEL]
    if strangers:
        shown = ", ".join(map(str, strangers[:5])) + (" ..." if len(strangers) > 5 else "")
        return Audit(
            False,
            f"{len(strangers)} of {len(rows)} sampled vectors were not made by {model} (chunks "
            f"{shown}); run `captain-memo reindex` to embed everything again with it",
        )
    return Audit(True, f"{len(rows)} sampled vectors are {model}'s (lowest agreement {agreement.min():.3f})")
