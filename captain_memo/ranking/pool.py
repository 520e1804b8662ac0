"""The candidate pool: every chunk either leg found, with its scores and its rank in each leg.

Stage 1 of the pipeline (ranking/pipeline.py). The keyword leg's bm25 is put on [0, 1] here by
min-max over the leg's hits, except when the fusion scales it itself over the union of both legs
(ranking/union.py): then ``keyword`` is left for that fusion to set, so it is scaled once.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from captain_memo.ranking.candidates import Candidate
from captain_memo.records import LOCAL, Memory

Key = TypeVar("Key", bound=Hashable)  # a chunk id, or (store, chunk id) over several stores


def min_max(values: Mapping[Key, float]) -> dict[Key, float]:
    """Scale onto [0, 1], best 1.0; when all are tied, all are 1.0."""
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if high - low <= 1e-12:
        return {key: 1.0 for key in values}
    return {key: (value - low) / (high - low) for key, value in values.items()}


def leg_ranks(hits: Mapping[Key, float]) -> dict[Key, int]:
    """chunk (id, or store and id) -> 1-based rank by score, best first."""
    return {chunk_id: i + 1 for i, chunk_id in enumerate(sorted(hits, key=lambda c: -hits[c]))}


@dataclass(frozen=True)
class StoreHits:
    """What one store's legs found: chunk id -> similarity and -> bm25 relevance (None when the
    keyword leg did not answer), and the text and memory of every chunk found."""

    store: str
    vector: Mapping[int, float]
    keyword: Mapping[int, float] | None
    rows: Mapping[int, tuple[str, Memory]]
    # Names of the query no candidate of this store holds whole (ranking/query.py unheld_names).
    unnamed: tuple[str, ...] = ()


def build_pool(
    vector_hits: Mapping[int, float],
    keyword_hits: Mapping[int, float] | None,
    rows: Mapping[int, tuple[str, Memory]],
    scale_keyword: bool = True,
) -> list[Candidate]:
    """One candidate per chunk in ``rows`` (text and memory of the chunks the legs found; a chunk
    deleted meanwhile is missing there and left out). ``vector_hits`` hold similarities,
    ``keyword_hits`` bm25 relevance (higher is better)."""
    return pool_of([StoreHits(LOCAL, vector_hits, keyword_hits, rows)], scale_keyword)


def pool_of(parts: Sequence[StoreHits], scale_keyword: bool = True) -> list[Candidate]:
    """One pool over the hits of every store searched (the local store, the team store): the
    keyword scaling and each leg's ranks are taken over all of them together, as one leg's would
    be, so that the stages after see one list. Each candidate's memory names its store.

    Similarities of one model are on one scale in any store; bm25 is not: its idf and average
    length are those of the store's own corpus, so the same match scores far lower in a small
    store (in a team store of 3 chunks beside a local one of 220, its best match's bm25 was a
    twelfth of the local best, and the decision the query asked for ranked 3rd and 4th behind
    weaker local matches). With more than one store, each store's bm25 is therefore divided by
    its best, before the fusion scales the union: its best match is then as strong as the other's.
    With one store nothing changes (the fusions' scaling ignores a common factor)."""
    vector: dict[tuple[str, int], float] = {}
    keyword: dict[tuple[str, int], float] = {}
    for part in parts:
        vector.update({(part.store, cid): score for cid, score in part.vector.items()})
        found = part.keyword or {}
        best = max(found.values(), default=0.0) if len(parts) > 1 else 0.0
        keyword.update({(part.store, cid): score / best if best > 0 else score for cid, score in found.items()})
    scaled = min_max(keyword) if scale_keyword else {}
    vector_rank, keyword_rank = leg_ranks(vector), leg_ranks(keyword)
    return [
        Candidate(
            chunk_id=cid,
            memory=memory if memory.store == part.store else replace(memory, store=part.store),
            text=text,
            vector=vector.get(key),
            keyword=scaled.get(key),
            bm25=keyword.get(key),
            vector_rank=vector_rank.get(key),
            keyword_rank=keyword_rank.get(key),
        )
        for part in parts
        for cid, (text, memory) in part.rows.items()
        for key in [(part.store, cid)]
    ]
