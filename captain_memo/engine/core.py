"""The engine: remember, recall, open, forget and supersede over one store and one embedder."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from captain_memo.base import secrets, validation
from captain_memo.base.chunking import chunk_texts, content_hash
from captain_memo.config import RankConfig, db_path, embed_config, rank_config
from captain_memo.embeddings import make_embedder
from captain_memo.embeddings.cache import QueryCache
from captain_memo.errors import EmbeddingError, InputError, RecallError, StoreError
from captain_memo.ranking import lifecycle
from captain_memo.ranking.fusion import fusion_for
from captain_memo.ranking.pipeline import RankRequest, cut, rank_pool
from captain_memo.ranking.pool import StoreHits, pool_of
from captain_memo.ranking.query import (
    STOPWORDS,
    analyse,
    fts_match,
    keyword_hit_is_the_option,
    options_in,
    topic,
    topic_match,
    unheld_names,
    unnamed_notice,
    without_names,
)
from captain_memo.ranking.result import RecallResult
from captain_memo.records import BOTH_LEGS, LOCAL, TEAM, Leg, Memory, NewMemory, RecallRequest, Surfacing
from captain_memo.sources import change_plan
from captain_memo.sources.change_plan import ChangePlan
from captain_memo.store import Store
from captain_memo.store.db import store_error
from captain_memo.store.protocol import MemoryStore
from captain_memo.store.search import (
    Scope,
    SqliteVecIndex,
    VectorIndex,
    default_index,
    keyword_leg,
    keyword_scores,
    newest_matching,
    selective_match,
)

log = logging.getLogger("captain_memo")
# Tide gains: how much a surfacing strengthens a memory, by how it surfaced.
SURFACING = {Surfacing.AUTO: "tide_gain_auto", Surfacing.SEARCH: "tide_gain_search", Surfacing.OPEN: "tide_gain_open"}
MAX_QUERY_CHARS = 10_000


class Engine:
    def __init__(
        self,
        store: MemoryStore,
        embedder,
        vector_index: VectorIndex | None = None,
        clock=time.time,
        leg_pool: Executor | None = None,
    ):
        """``leg_pool`` runs the two search legs (by default a pool of two threads made on first use)."""
        self.store = store
        self.clock = clock  # seconds since the epoch; Tide and recency read the time here only
        store.initial_stability = rank_config().tide_initial_stability
        self.embedder = embedder
        self.queries = QueryCache(embedder)
        self.index: VectorIndex = vector_index or default_index(store)
        self._pool: Executor | None = leg_pool
        self._read_only_said = False
        # A long-lived holder's writer queue: a recall's Tide bookkeeping then waits for no write.
        self.defer: Callable[[Callable[[], None]], object] | None = None
        if store.checks_model_at_open:  # a team store refuses another model for its vector leg only
            store.check_model(embedder.model_id)
        # HTTP providers learn their dimension from the first answer; the store knows it already,
        # so a server that starts answering with another size is caught before a vector is used.
        stored_dim = store.meta("embed_dim")
        if stored_dim is not None and hasattr(embedder, "expect_dim"):
            embedder.expect_dim(int(stored_dim))

    @classmethod
    def open(
        cls, path: Path | str | None = None, embedder=None, index: Callable[[Store], VectorIndex] = SqliteVecIndex
    ) -> Engine:
        """``index`` makes the vector index over the opened store: sqlite-vec (the default) for
        one-shot commands, ``warm_memory_index`` for long-lived processes such as the editor host."""
        store = Store(path or db_path())
        vector_index = index(store)
        try:
            return cls(store, embedder or make_embedder(embed_config()), vector_index=vector_index)
        except BaseException:
            vector_index.close()
            store.close()
            raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        self.index.close()
        if hasattr(self.embedder, "close"):  # HTTP providers hold a connection pool
            self.embedder.close()
        self.store.close()

    # -- embedding ----------------------------------------------------------------------

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = self.embedder.embed(texts)
        self.store.bind_model(self.embedder.model_id, int(vectors.shape[1]))
        return vectors

    def try_embed(self, texts: list[str]) -> np.ndarray | None:
        """Vectors, or None when the embedder is down: the text is still stored and keyword-indexed,
        and its vectors are filled in later by ``backfill`` or ``reindex``."""
        try:
            return self.embed(texts)
        except EmbeddingError as exc:
            log.warning("vector leg: embedding failed, storing without vectors for now: %s", exc)
            return None

    def backfill(self, limit: int = 256) -> int:
        """Embed chunks stored while the embedder was down; returns how many got a vector."""
        self.store.require_writable()
        pending = self.store.pending_chunks(limit)
        if not pending:
            return 0
        vectors = self.embed([text for _, text in pending])
        self.store.set_vectors([chunk_id for chunk_id, _ in pending], vectors)
        return len(pending)

    # -- writing ------------------------------------------------------------------------

    def remember(self, memory: NewMemory) -> int:
        """Store a memory, its chunks, keyword rows and vectors in one transaction; returns its id."""
        self.store.require_writable()
        clean, chunks = self.prepare(memory)
        vectors = self.try_embed(chunks)
        memory_id = self.store.add(clean, chunks, vectors, now=self.clock())
        if vectors is not None and self.store.pending_chunks(1):
            self._backfill_quietly()
        if clean.kind == "observation" and vectors is not None:
            from captain_memo.sources.supersession import supersede_older_versions

            # A newer version of the same fact (logs, never raises).
            supersede_older_versions(self.store, self.try_embed, memory_id)
        return memory_id

    def remember_many(self, memories: list[NewMemory], skip_duplicates: bool = True) -> list[int | None]:
        """Store a batch with one embedding call; an exact duplicate already stored is skipped (None),
        so an interrupted import can simply be run again."""
        self.store.require_writable()
        prepared = [self.prepare(m) for m in memories]
        todo, seen = [], set()
        for clean, chunks in prepared:
            key = (content_hash(clean.kind, clean.title, clean.body), clean.project)
            # A repeat within the batch counts as stored: it would be once the batch commits.
            if skip_duplicates and (key in seen or self.store.find_by_hash(*key)):
                continue
            seen.add(key)
            todo.append((clean, chunks))
        flat = [chunk for _, chunks in todo for chunk in chunks]
        vectors = self.try_embed(flat) if flat else None
        ids: dict[int, int] = {}
        offset = 0
        for clean, chunks in todo:
            part = None if vectors is None else vectors[offset : offset + len(chunks)]
            offset += len(chunks)
            ids[id(clean)] = self.store.add(clean, chunks, part, now=self.clock())
        return [ids.get(id(clean)) for clean, _ in prepared]

    def prepare(self, memory: NewMemory) -> tuple[NewMemory, list[str]]:
        """The memory as it will be stored (checked, private spans removed) and its chunk texts."""
        body = validation.without_private(
            validation.unix_newlines(validation.checked_text("text", memory.body, validation.MAX_BODY_CHARS))
        )
        if not body.strip():
            raise InputError("nothing to remember: the text is empty")
        title = validation.without_private(
            validation.unix_newlines(validation.checked_text("title", memory.title or "", validation.MAX_TITLE_CHARS))
        ).strip()
        validation.checked_kind(memory.kind)
        for name in ("project", "branch"):
            validation.checked_optional(name, getattr(memory, name))
        validation.checked_optional("file path", memory.source.path)
        # A wrong type stored here broke every later recall (a date as text: float - str).
        validation.checked_time("created_at", memory.created_at)
        validation.checked_line("line_start", memory.source.line_start)
        validation.checked_line("line_end", memory.source.line_end)
        # Given chunks (a source's sections) are cleaned too: a private span must not reach the index.
        chunks = [
            c for c in (validation.without_private(validation.unix_newlines(c)) for c in memory.chunks) if c.strip()
        ] or chunk_texts(title, body)
        for chunk in chunks:
            validation.checked_text("chunk", chunk, validation.MAX_BODY_CHARS)
        if secrets.redaction_on():  # CAPTAIN_MEMO_REDACT_SECRETS=1; otherwise callers decide (secrets.check)
            body, title, chunks = secrets.redact(body), secrets.redact(title), [secrets.redact(c) for c in chunks]
        # The chunks go back beside the memory, cleaned; the memory itself keeps none.
        return dataclasses.replace(memory, body=body, title=title, chunks=()), chunks

    def _backfill_quietly(self) -> None:
        try:
            self.backfill()
        except Exception as exc:
            log.warning("vector leg: backfill failed: %s", exc)

    def forget(self, memory_id: int) -> None:
        self.store.delete(memory_id)

    def supersede(self, old_id: int, new_id: int) -> None:
        if old_id == new_id:
            raise InputError("a memory cannot supersede itself")
        self.store.set_superseded(old_id, new_id)

    def unsupersede(self, old_id: int) -> int | None:
        """Clear ``old_id``'s supersession; returns the memory that superseded it, None if none did."""
        return self.store.set_superseded(old_id, None)

    def show(self, memory_id: int, cfg: RankConfig | None = None) -> Memory:
        """A memory in full; opening counts as the strongest surfacing for Tide."""
        memory = self.store.get(memory_id)
        self._surface([memory], Surfacing.OPEN, cfg or rank_config())
        return self.store.get(memory_id)

    def _surface(self, memories: list[Memory], how: Surfacing, cfg: RankConfig) -> None:
        if not cfg.tide or not memories:
            return
        if self.store.read_only:
            self._say_read_only()
            return
        gain, now = getattr(cfg, SURFACING[how]), self.clock()
        updates = [(m.id, lifecycle.reinforced(m, gain, now, cfg)) for m in memories]
        opened = how is Surfacing.OPEN
        if self.defer is not None and not opened:
            self.defer(lambda: self.store.record_surfacing(updates, now, opened=False))
            return
        try:
            self.store.record_surfacing(updates, now, opened=opened, patient=False)
        except StoreError as exc:  # another process holds the write lock: the answer goes out unrecorded
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            # Bookkeeping, not the user's request: said with -v, not as a warning beside every
            # answer while another process writes a lot (an import, several editors).
            log.info("this %s was not recorded for Tide: %s", "opening" if opened else "recall", exc)

    def _say_read_only(self) -> None:
        if not self._read_only_said:
            self._read_only_said = True
            log.warning(
                "%s is read-only (%s): recalls are not recorded for Tide", self.store.path, self.store.read_only_reason
            )

    # -- recall -------------------------------------------------------------------------

    def recall(self, request: RecallRequest | str, team=None, **options) -> RecallResult:
        """Search, rank and explain. ``request`` is a RecallRequest, or the query text with the
        request's other fields as keywords (``engine.recall("retry policy", limit=5)``).

        ``team`` (team.py's TeamClient) is searched at the same time, in its own thread, and its hits
        join the pool before fusion; when it fails or is slower than its timeout, the local answer
        comes back with the failure named, as with a failed leg."""
        if isinstance(request, str):
            request = RecallRequest(request, **options)
        elif options:
            raise TypeError("recall takes a RecallRequest or a query with keywords, not both")
        started = time.perf_counter()
        query = validation.checked_text("query", validation.escaped_bytes(request.query), MAX_QUERY_CHARS)
        if not query.strip():
            raise InputError("the query is empty")
        limit = request.limit
        if limit is not None and limit < 1:  # 0 returned the default number of hits, -1 one hit
            raise InputError(f"the number of hits must be at least 1, not {limit}")
        cfg = request.cfg or rank_config(request.profile)
        scope = Scope(request.project, request.all_projects)
        shape = analyse(query, cfg.rare_token_min_length, cfg.temporal_word_forms)
        changes = self._change_plan(query, shape, scope, cfg)
        team_job = team.search(query, request, cfg, shape.temporal) if team is not None else None
        try:
            local, answered, failures = self.search(query, scope, cfg, request.legs, shape.temporal, changes)
            parts = [local]
        except RecallError as exc:
            if team_job is None:
                raise
            parts, answered, failures = [], (), {"local": str(exc)}
        stores = (LOCAL,) if parts else ()
        if team_job is not None:
            found, team_failures = team.collect(team_job, started)
            failures = {**failures, **team_failures}
            if found is not None:
                parts, stores = [*parts, found], (*stores, TEAM)
                if changes is not None:  # a window is judged over both stores
                    changes = change_plan.over_team(changes, found.rows)
            if not parts:
                raise RecallError("; ".join(f"{k}: {v}" for k, v in failures.items()))
        pool = pool_of(parts, scale_keyword=not fusion_for(cfg).scores_union)
        touching = {(LOCAL, mid): why for mid, why in changes.touching.items()} if changes else {}
        window = changes.window if changes else None
        req = RankRequest(shape, request.branch, self.clock(), limit or cfg.result_limit, touching, window)
        ranked = rank_pool(pool, req, cfg)
        hits = cut(ranked, req.limit)
        if request.record:  # Tide is this user's: team memories are not reordered by one user's lookups
            self._surface([c.memory for c in hits if c.memory.store == LOCAL], Surfacing(request.how), cfg)
        if Leg.VECTOR in answered and not self.store.read_only and self.store.pending_chunks(1):
            # The embedder answers again: give chunks saved while it was down their vectors.
            self._backfill_quietly()
        elapsed = (time.perf_counter() - started) * 1000
        # A name no store holds: the hits are only the closest by meaning, and the answer says so.
        unnamed = tuple(name for name in parts[0].unnamed if all(name in p.unnamed for p in parts)) if parts else ()
        notice = " ".join(
            n for n in (unnamed_notice(unnamed) if unnamed else "", changes.notice if changes else "") if n
        )
        return RecallResult(
            query, cfg.profile, tuple(hits), answered, failures, elapsed, len(pool), stores, notice, unnamed
        )

    def _change_plan(self, query: str, shape, scope: Scope, cfg: RankConfig) -> ChangePlan | None:
        """A change question's touching changes and window (sources/change_plan.py); None for any other."""
        try:
            return change_plan.plan(self.store, query, shape, scope, cfg, self.clock())
        except Exception as exc:  # the legs meet the same failure and report it
            log.warning("changes touching the topic: %s", self._describe_failure(exc))
            return None

    def search(
        self,
        query: str,
        scope: Scope,
        cfg: RankConfig,
        legs: tuple[Leg, ...],
        temporal: bool,
        changes: ChangePlan | None = None,
    ):
        """Both legs over this store: (StoreHits, the legs that answered, failures by leg).

        A temporal query over dated observations of its topic is searched by its topic: the time
        words are recency's job, and "change" or "latest" in a commit message says nothing. The
        changes a change question touches join the keyword leg's hits (``changes``)."""
        # Searched by its topic only when changes touch it: a window over notes keeps its words.
        asked = changes.query if changes and changes.touching else query
        newest = self._newest(asked, scope, cfg) if temporal and Leg.KEYWORD in legs else []
        searched = (topic(asked) or asked) if newest else asked
        if changes and changes.chunk_ids and Leg.KEYWORD in legs:
            newest = list(dict.fromkeys([*changes.chunk_ids, *newest]))
        return self.leg_hits(searched, scope, cfg, legs, newest)

    def _newest(self, query: str, scope: Scope, cfg: RankConfig) -> list[int]:
        """The newest observations matching a temporal query's topic (``temporal_pool``), if any."""
        if not cfg.temporal_intent or cfg.temporal_pool <= 0:
            return []
        try:
            return newest_matching(self.store, topic_match(query), scope, cfg.temporal_pool)
        except Exception as exc:  # the keyword leg meets the same failure and reports it
            log.warning("newest observations of the topic: %s", self._describe_failure(exc))
            return []

    def candidates(self, query: str, scope: Scope, cfg: RankConfig, *legs_and_newest):
        """Run the legs concurrently, each catching its own error; build the candidate pool.

        ``legs_and_newest``: ``leg_hits``' ``legs`` and ``newest`` (chunk ids that join the keyword
        leg's hits, scored by bm25 like them)."""
        hits, answered, failures = self.leg_hits(query, scope, cfg, *legs_and_newest)
        return pool_of([hits], scale_keyword=not fusion_for(cfg).scores_union), answered, failures

    def leg_hits(
        self,
        query: str,
        scope: Scope,
        cfg: RankConfig,
        legs: tuple[Leg, ...] = BOTH_LEGS,
        newest: list[int] | None = None,
    ) -> tuple[StoreHits, tuple[str, ...], dict[str, str]]:
        """What the legs found, run concurrently, each catching its own error; RecallError when
        both failed. Under union fusion every hit is scored by both legs here, within this store."""
        match = fts_match(query, cfg.keyword_identifier_parts)
        k = cfg.candidates_per_leg
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="captain-memo-leg")
        jobs = {}
        if Leg.VECTOR in legs:
            jobs[Leg.VECTOR.value] = self._pool.submit(self._vector_leg, query, scope, k)
        if Leg.KEYWORD in legs:
            jobs[Leg.KEYWORD.value] = self._pool.submit(
                self._keyword_leg, match, scope, k, newest or [], cfg.pool_per_kind, cfg.curated_statistics
            )
        found, failures = {}, {}
        for leg, job in jobs.items():
            try:
                found[leg] = job.result()
            except Exception as exc:  # a leg's failure must not take recall down
                failures[leg] = self._describe_failure(exc)
                log.warning("%s leg failed: %s", leg, failures[leg])
        if not found:
            raise RecallError("both search legs failed: " + "; ".join(f"{k}: {v}" for k, v in failures.items()))
        vector_hits, query_vec = found.get("vector", ({}, None))
        keyword_hits, match = found.get("keyword", (None, match))
        union = fusion_for(cfg).scores_union
        if union:
            vector_hits, keyword_hits = self._score_union(vector_hits, keyword_hits, query_vec, match, cfg)
        rows = self.store.chunk_rows(list(set(vector_hits) | set(keyword_hits or {})))
        # A query that is only names (a lookup under the cursor): a part of a name nothing holds is
        # no evidence, so the keyword leg searches again without that name. In a sentence the parts
        # are words of the question ("Switch for_parameterize to for_parametrize" found its entry by
        # them in pytest_changelog; doc/eval.md, "The whole-store set").
        shape = analyse(query)
        asked = shape.identifiers if cfg.names_whole and shape.identifier_only else ()
        unnamed = unheld_names(asked, (text for text, _ in rows.values())) if asked else ()
        if unnamed and keyword_hits is not None:  # a part of a name nothing holds is no evidence
            match = fts_match(without_names(query, unnamed), cfg.keyword_identifier_parts)
            keyword_hits, match = self._keyword_leg(
                match, scope, k, newest or [], cfg.pool_per_kind, cfg.curated_statistics
            )
            vector_hits = found.get("vector", ({}, None))[0]
            if union:
                vector_hits, keyword_hits = self._score_union(vector_hits, keyword_hits, query_vec, match, cfg)
            rows = self.store.chunk_rows(list(set(vector_hits) | set(keyword_hits or {})))
        if keyword_hits and options_in(query):  # "--lf" is indexed as "lf": keep the hits that hold "--lf"
            keyword_hits = {
                c: s for c, s in keyword_hits.items() if c in rows and keyword_hit_is_the_option(query, rows[c][0])
            }
            rows = {c: row for c, row in rows.items() if c in vector_hits or c in keyword_hits}
        return StoreHits(LOCAL, vector_hits, keyword_hits, rows, unnamed), tuple(found), failures

    def _keyword_leg(
        self, match: str | None, scope: Scope, k: int, newest: list[int], per_kind: bool = False, curated: bool = False
    ):
        match = selective_match(self.store, match, STOPWORDS)  # common words left out at scale (store/search.py)
        # Per kind: commits cannot crowd out the docs; ``curated``: nor reweigh the docs' words.
        hits = keyword_leg(self.store, match, scope, k, per_kind, curated)
        extra = [chunk_id for chunk_id in newest if chunk_id not in hits]
        scored = keyword_scores(self.store, match, extra, curated)
        # One whose topic word was too common to search (selective_match) still joins, at 0.
        hits.update({chunk_id: scored.get(chunk_id, 0.0) for chunk_id in extra})
        return hits, match

    def _describe_failure(self, exc: Exception) -> str:
        """One line for a failed leg; a SQLite error names the file and what to do about it."""
        readable = store_error(exc, self.store.path)
        return str(readable) if readable is not None else f"{type(exc).__name__}: {exc}"

    def _vector_leg(self, query: str, scope: Scope, k: int):
        # A reindex by another process may have swapped the store to another model since open.
        self.store.check_model(self.embedder.model_id)
        query_vec = self.queries.embed_query(query)
        return self.index.knn(query_vec, scope, k), query_vec

    def _score_union(self, vector_hits, keyword_hits, query_vec, match, cfg: RankConfig):
        """Give every candidate both scores, so neither index's blind spot decides alone (union fusion)."""
        union = set(vector_hits) | set(keyword_hits or {})
        if query_vec is not None:
            missing = [i for i in union if i not in vector_hits]
            vector_hits = {**vector_hits, **self.index.similarities(query_vec, missing)}
        if keyword_hits is not None:
            missing = [i for i in union if i not in keyword_hits]
            keyword_hits = {**keyword_hits, **keyword_scores(self.store, match, missing, cfg.curated_statistics)}
        return vector_hits, keyword_hits
