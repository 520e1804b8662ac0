"""The application interface: every operation a front end needs, behind one door.

The command line, the editor service and any other front end call ``Memo`` for recall, remember,
show, supersede, forget, index, import, reindex, stats, doctor and backup, and import nothing below
it (store, embeddings, sources): what they see are the records (records.py), the results
(ranking/result.py) and this class. A SQLite failure met inside any operation leaves it as one
readable error naming the file and what to do (``store_error``), translated here and nowhere else.
The engine (model and vector index) is opened on first use, so store-only operations (stats, a
reindex to another model) never load or check an embedder.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from captain_memo.records import Memory, MemoryRef, NewMemory, RecallRequest, Superseded, parse_ref

if TYPE_CHECKING:
    from captain_memo.engine.team_fanout import TeamFanout
    from captain_memo.sources.index_plan import IndexOutcome
    from captain_memo.sources.index_report import IndexReport


def _translated(method):
    """Re-raise a SQLite failure as the store's readable error (anything else passes unchanged)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            readable = readable_error(exc, self.path)
            if readable is None:
                raise
            raise readable from None

    return wrapper


class Memo:
    """One store (and, once needed, one engine) seen by a front end."""

    def __init__(
        self, path: Path | str, embedder=None, warm: bool = False, engine=None, embed_config=None, team_config=None
    ):
        """Nothing is opened here: the store on first use (so a command with nothing to do creates
        no database), the engine on the first operation that needs the model or the index, the
        team store on the first operation that uses it.
        ``warm``: search an in-memory vector index built in the background, for long-lived
        processes (the editor host, a service); one-shot commands keep sqlite-vec."""
        self.path = Path(path)
        self._embedder = embedder
        self._warm = warm
        self._engine = engine
        self._store = engine.store if engine is not None else None
        self._embed_config = embed_config  # config.EmbedConfig; None: the environment's
        self._team_config = team_config  # config.TeamConfig; None: the environment's
        self._team = None
        self._project_ids: dict[str, str] = {}

    @classmethod
    def open(
        cls, path: Path | str | None = None, embedder=None, warm: bool = False, embed_config=None, team_config=None
    ) -> Memo:
        from captain_memo.config import db_path

        return cls(path or db_path(), embedder, warm, embed_config=embed_config, team_config=team_config)

    @classmethod
    def over(cls, engine) -> Memo:
        """A Memo around an engine already open (tests, benchmarks)."""
        return cls(engine.store.path, engine.embedder, engine=engine)

    @property
    def store(self):
        if self._store is None:
            from captain_memo.store import Store

            self._store = Store(self.path)
        return self._store

    @property
    def engine(self):
        if self._engine is None:
            from captain_memo.engine.core import Engine
            from captain_memo.store.memindex import warm_memory_index
            from captain_memo.store.search import SqliteVecIndex

            index = (warm_memory_index if self._warm else SqliteVecIndex)(self.store)
            try:
                self._engine = Engine(self.store, self.embedder, vector_index=index)
            except BaseException:
                index.close()
                raise
        return self._engine

    @property
    def read_only_reason(self) -> str | None:
        """Why this user may only read the store (lookups work, writes fail); None when writable."""
        return self.store.read_only_reason if self.store.read_only else None

    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = self.configured_embedder(self._embed_config)
        return self._embedder

    @staticmethod
    def configured_embedder(cfg=None):
        """The embedder the configuration names (``cfg``, else the environment's); nothing loaded yet."""
        from captain_memo.config import embed_config
        from captain_memo.engine import core as engine_core

        # Made where Engine.open makes it (engine_core.make_embedder), the one place to swap it.
        return engine_core.make_embedder(cfg or embed_config())

    @property
    def team(self):
        """The team store (team.py's TeamClient), None when CAPTAIN_MEMO_TEAM_DB is not set."""
        if self._team is None:
            from captain_memo.config import team_config

            cfg = self._team_config or team_config()
            if cfg.url is not None:
                from captain_memo.engine.team import TeamClient

                self._team = TeamClient(cfg, lambda: self.embedder, self.project_id)
                self._team.connect_soon()
        return self._team

    def project_id(self, project: str | None) -> str | None:
        """The portable identity of a local project (base/project_identity.py): read from its folder while it is
        there (and recorded), else the one recorded for it, else the path itself."""
        if project is None:
            return None
        if project not in self._project_ids:
            import os

            known = self.store.project_identities().get(project)
            if os.path.isdir(project):
                from captain_memo.base.project_identity import portable_id

                found = portable_id(project)
                if found != known and not self.store.read_only:
                    self.store.record_project(project, found)
                known = found
            self._project_ids[project] = known or project
        return self._project_ids[project]

    def prefer_queries(self) -> None:
        """Let a query's embedding go before the rest of a long one (embeddings/reads_first.py), and keep
        no memory a long embedding once needed (embeddings/local.py ``long_lived``): for a
        long-lived holder whose recalls run beside its writes. Before the engine opens."""
        from captain_memo.embeddings.reads_first import QueriesFirst

        self._embedder = QueriesFirst(self.embedder)
        long_lived = getattr(self._embedder, "long_lived", None)  # the local model's; none over HTTP
        if long_lived is not None:
            long_lived()

    def reading(self):
        """Mark a read in flight for its whole run: a long embedding's slices wait for it
        (embeddings/reads_first.py) where ``prefer_queries`` was called; else nothing."""
        reading = getattr(self._embedder, "reading", None)
        return reading() if reading is not None else nullcontext()

    def embed_long(self, texts: list[str]):
        """Another process's texts embedded with this Memo's model, as a long embedding: slice by
        slice behind the reads where ``prefer_queries`` was called (the ``embed`` request)."""
        embed_long = getattr(self.embedder, "embed_long", None)
        return embed_long(texts) if embed_long is not None else self.embedder.embed(texts)

    @property
    def _stores(self) -> TeamFanout:
        """The local store and the team store, each memory reference sent to the one holding it."""
        from captain_memo.engine.team_fanout import TeamFanout

        return TeamFanout(self)

    def _deliberate_embedder(self):
        """An embedder that asks the endpoint even while recalls are backing off from it: for a
        run the user started on purpose (reindex, a health check)."""
        from captain_memo.config import embed_config
        from captain_memo.engine import core as engine_core

        return engine_core.make_embedder(self._embed_config or embed_config(), backoff=False)

    def warm_up(self) -> None:
        """Open the store, start connecting to the team store, and load the model now, so the
        first search does not wait for them."""
        _ = self.team  # made on first use, which starts its connection
        self.engine.queries.embed_query("warm up")

    def settled(self) -> bool:
        """No background work is running: the in-memory vector index is not being built."""
        return self._engine is None or not getattr(self._engine.index, "building", False)

    def vector_shape(self) -> tuple:
        """The stored vectors' model, dimension and table: a reindex to another model changes them."""
        return self.store.meta("embed_model"), self.store.meta("embed_dim"), self.store.vec_table

    def file_moved(self) -> bool:
        """The store's file is no longer at its path (moved, deleted or replaced): a long-lived
        holder closes it (which saves its last writes into it) and opens the path afresh."""
        return self._store is not None and self._store.moved()

    def checkpoint(self) -> str | None:
        """Write the WAL into the file, so the file alone is complete (after a long-lived holder's
        write). It runs after a commit: a failure (a full disk) loses nothing, the write stays in
        the WAL, so it is logged and returned for a warning, never raised (reported as "nothing
        was saved", a committed save was made again by the user's retry)."""
        if self._store is None:
            return None
        try:
            self._store.checkpoint()
        except Exception as exc:
            import logging

            problem = f"its write-ahead log was not written into {self.path} ({exc}); it is kept there"
            logging.getLogger("captain_memo").warning("saved, but %s", problem)
            return problem
        return None

    def defer_writes(self, queue: Callable[[Callable[[], None]], object]) -> None:
        """Hand the bookkeeping writes of a recall (Tide) to ``queue`` rather than making the recall
        wait for the write lock (a long-lived holder with a writer thread)."""
        self.engine.defer = queue

    def close(self) -> None:
        if self._team is not None:
            self._team.close()
            self._team = None
        if self._engine is not None:
            self._engine.close()  # closes the store too
        elif self._store is not None:
            self._store.close()
        self._engine = self._store = None

    def __enter__(self) -> Memo:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- memories -----------------------------------------------------------------------

    @_translated
    def recall(self, request: RecallRequest, team: bool = True):
        """Both legs over the local store and, when one is set and ``team`` asks for it, the team
        store, ranked as one."""
        return self.engine.recall(request, team=self.team if team else None)

    @_translated
    def naming(self, token: str, project: str | None, branch: str | None, limit: int) -> list[int | str]:
        """Ids of the memories (up to ``limit`` hits) whose text holds ``token`` exactly: the keyword
        leg alone, recorded nowhere, so it is cheap enough for a hint under the cursor. Local ids
        first, as numbers, then team ids (``"t12"``); none for a token that is not ``nameable``."""
        from captain_memo.records import Leg, Surfacing, json_id

        if not self.nameable(token):
            return []
        result = self.recall(
            RecallRequest(
                token,
                project=project,
                branch=branch,
                limit=limit,
                legs=(Leg.KEYWORD,),
                how=Surfacing.AUTO,
                record=False,
            )
        )
        found = sorted(
            {(hit.memory.store, hit.memory.id): hit.memory for hit in result.hits if token in hit.text}.items()
        )
        return [json_id(memory) for _, memory in found]

    @staticmethod
    def nameable(token: str) -> bool:
        """Whether ``naming`` looks ``token`` up: an identifier, a dotted name, a constant
        (ranking/query.py's ``is_code_shaped``). A plain word under the cursor is named by too many
        memories to hint at; a front end asks this before opening anything."""
        from captain_memo.ranking.query import is_code_shaped

        return is_code_shaped(token)

    @_translated
    def remember(self, memory: NewMemory) -> int:
        return self.engine.remember(memory)

    @_translated
    def saved_by_key(self, source_key: str, project: str | None) -> int | None:
        """The id of the memory saved under ``source_key`` in ``project``, None when there is none."""
        found = self.store.find_by_source_key(source_key, project)
        return None if found is None else found.id

    def import_memories(
        self, memories: Sequence[NewMemory], label: str = "importing", batch: int = 32, quiet: bool = False
    ) -> tuple[int, int]:
        """Store in batches, skipping exact duplicates; returns (added, skipped as already present)."""
        from captain_memo.base.progress import Progress

        added = skipped = 0
        bar = Progress(len(memories), label, quiet=quiet)
        for start in range(0, len(memories), batch):
            part = list(memories[start : start + batch])
            ids = self.engine.remember_many(part)
            added += sum(1 for i in ids if i is not None)
            skipped += sum(1 for i in ids if i is None)
            bar.advance(len(part))
        bar.close()
        return added, skipped

    @_translated
    def show(self, memory_id: int | str) -> Memory:
        """A memory in full (``12``, or ``t12`` in the team store); opening a local memory counts as
        the strongest surfacing for Tide (team memories keep no one user's Tide)."""
        ref = self.ref(memory_id)
        if ref.team:
            return self.get(ref)
        return self.engine.show(ref.id)

    @_translated
    def get(self, memory_id: int | str | MemoryRef) -> Memory:
        """A memory as stored, without counting as a surfacing (a resource read, a preview)."""
        return self._stores.get(self.ref(memory_id))

    @_translated
    def chunk_texts(self, memory_id: int | str | MemoryRef) -> list[str]:
        """A memory's chunks' texts in order (what ``show 12:310`` finds a line in)."""
        return self._stores.chunk_texts(self.ref(memory_id))

    @staticmethod
    def ref(memory_id: int | str | MemoryRef) -> MemoryRef:
        """A memory id as given by a person or a front end (12, "12", "#t12") as a reference; InputError
        when it is not one."""
        from captain_memo.errors import InputError

        if isinstance(memory_id, MemoryRef):
            return memory_id
        try:
            return parse_ref(memory_id)
        except ValueError as exc:
            raise InputError(str(exc)) from None

    @_translated
    def list_memories(self, project: str | None = None, **page) -> list[Memory]:
        """Newest first, paged as the store pages them (``all_projects``, default True: False keeps
        ``project``'s memories and personal notes; ``kind``; ``limit``, default 100; ``before``: the
        page after the memory saved at that (created_at, id))."""
        return self.store.list_memories(project, **page)

    @_translated
    def list_team_memories(self, project: str | None, limit: int = 100) -> list[Memory]:
        """The team store's newest memories of ``project`` (and its notes for no project)."""
        return self._stores.list_team(project, limit)

    @_translated
    def forget(self, memory_id: int | str) -> None:
        self._stores.forget(self.ref(memory_id))

    @_translated
    def supersede(self, old_id: int | str, new_id: int | str) -> None:
        """``old`` is out of date, ``new`` replaces it. A team memory is superseded only by a team
        memory (what everyone reads cannot point into one person's store); a local memory by either."""
        self._stores.supersede(self.ref(old_id), self.ref(new_id))

    @_translated
    def unsupersede(self, old_id: int | str) -> str | None:
        """Make ``old_id`` current again; what superseded it (``12`` or ``t12``), None when it was not
        superseded (nothing changed)."""
        return self._stores.unsupersede(self.ref(old_id))

    # -- the team store -----------------------------------------------------------------

    @_translated
    def remember_team(self, memory: NewMemory) -> MemoryRef:
        """Store a memory in the team store, under its project's portable identity; its reference
        (``t12``). An exact copy already there is not stored twice: its reference comes back."""
        return self._stores.remember_team(memory)

    @_translated
    def publish(self, memory_id: int | str, keep: bool = False) -> MemoryRef:
        """Move a local memory to the team store (``keep``: copy it, the local one marked superseded
        by the team copy); its team reference. Local memories it superseded, and that superseded it,
        keep their links: those that pointed to it point to the team copy."""
        return self._stores.publish(self.ref(memory_id), keep)

    @_translated
    def superseded(self) -> list[Superseded]:
        return self.store.superseded()

    @_translated
    def missing_vectors(self, memory_id: int) -> int:
        """How many of a memory's chunks wait for a vector (saved while the embedder was down)."""
        return self.store.missing_vectors(memory_id)

    @_translated
    def pending_vectors(self) -> int:
        """Chunks stored without a vector (the embedder was down); keyword search finds them meanwhile."""
        return self.store.counts()["pending_vectors"]

    # -- sources ------------------------------------------------------------------------

    @_translated
    def index(
        self,
        paths: Sequence[str] = (),
        git: bool = False,
        branch: str | None = None,
        show_progress: bool = True,
        max_commits: int | None = None,
    ) -> IndexOutcome:
        """Named files or folders, else the configured note and skill folders; with ``git``, the
        repository's new commits too (sources/index_plan.py). InputError when there is nothing to index."""
        from captain_memo.sources import index_plan

        return index_plan.index(self, paths, git, branch, show_progress, max_commits)

    @_translated
    def forget_folder(self, path: str) -> tuple[str, int]:
        """Stop refreshing a folder named before, and remove the memories indexed from it:
        (its path in the repository, how many memories went). InputError when it was not named."""
        from captain_memo.sources import index_plan

        return index_plan.forget_folder(self, path)

    def index_sources(self) -> dict:
        """What a plain `index` here reads: each folder with its kind, where it comes from and its
        notes; and the documentation-like folders it does not read."""
        from captain_memo.sources import index_plan

        return index_plan.index_sources(self)

    @_translated
    def index_written(self, path: str, project: str | None, branch: str | None) -> IndexReport:
        """Re-index one file just written, into the team store when it lies in a repository's note
        folder and one is set; outside the note folders, nothing is opened for a file not a note."""
        from captain_memo.sources import index_plan

        return index_plan.index_written_file(lambda: self, path, project, branch)

    def followed(self) -> list:
        """The repositories indexed into this store, each with the paths its engine watches
        (sources/following.py); none before the store exists."""
        from captain_memo.sources.following import followed

        return followed(self.store) if self.path.exists() else []

    def followed_record(self) -> str | None:
        """The stored list of followed repositories as it is kept (it changes when one is added)."""
        from captain_memo.sources.following import META_KEY

        return self.store.meta(META_KEY) if self.path.exists() else None

    def stale_notice(self, root: str | None, project: str | None, branch: str | None, query: str | None = None) -> str:
        """ "N newer commits are not indexed (...)" when the repository at ``root`` holds commits
        newer than the newest stored for its branch (and ``query``, when given, asks about changes)."""
        from captain_memo.sources import following

        if root is None or not self.path.exists() or (query is not None and not following.asks_about_changes(query)):
            return ""
        return following.stale_notice(following.unindexed_commits(self.store, Path(root), project, branch))

    @_translated
    def catch_up(self, repository, kinds: frozenset[str] = frozenset({"git", "notes"})) -> dict:
        """Index what changed in a followed repository (new commits, changed notes) as `index` does."""
        from captain_memo.sources.following import catch_up

        return catch_up(self, repository, kinds)

    @_translated
    def index_folder(self, folder, settings) -> IndexReport:
        """Index one folder (or file) found by the sources: into the team store when it is a
        repository's and one is set, else here."""
        from captain_memo.sources import index_plan

        return index_plan.index_folder(self, folder, settings)

    def index_into_team(self, folders, settings, show_progress: bool) -> IndexReport:
        """Index repository folders into the team store, then drop this store's copies of them."""
        return self._stores.index_team(folders, settings, show_progress)

    @_translated
    def health(self) -> str:
        """Proof the store can be written (the write lock taken and let go) and holds vectors of the
        configured model (checked without loading it); a one-line description."""
        self.store.check_writable()
        self.store.check_model(self._deliberate_embedder().model_id)
        from captain_memo.presentation.words import counted

        return (
            f"{self.path} is writable: {counted(self.store.counts()['memories'], 'memory')}, model "
            f"{self.store.meta('embed_model') or 'none yet'}"
        )

    # -- maintenance --------------------------------------------------------------------

    @_translated
    def reindex(self, batch_size: int, progress: Callable | None = None, restart: bool = False):
        """Re-embed every chunk with the configured model (resumable); a ReindexReport."""
        from captain_memo.store.reindex import reindex

        return reindex(self.store, self._deliberate_embedder(), batch_size, progress, restart=restart)

    @_translated
    def fill_missing(self, batch_size: int, progress: Callable | None = None) -> int:
        from captain_memo.store.reindex import fill_missing

        return fill_missing(self.store, self._deliberate_embedder(), batch_size, progress)

    @_translated
    def refuse_if_reindexing(self) -> None:
        """StoreError naming the process when another reindex of this store is running."""
        from captain_memo.store.lock import running_error, running_reindex

        if (owner := running_reindex(self.path)) is not None:
            raise running_error(self.path, owner)

    @_translated
    def pending_reindex(self) -> tuple[str, str] | None:
        """(table, model) of an interrupted reindex, or None."""
        from captain_memo.store.reindex import pending_target

        return pending_target(self.store)

    def doctor(self, project: str | None = None) -> list[tuple[str, bool, str]]:
        """Every check of ``doctor`` on this database and, when one is set, the team store (never
        raises: a failure is a failed check); ``project``: the caller's, whose grant is checked.
        Each is (item, ok, detail): SQLite, sqlite-vec, FTS5, the file's integrity and permissions,
        the model and the counts; a check that fails says what to do."""
        from captain_memo.engine.doctor import checks

        return checks(self.path) + self.team_check(project)

    @_translated
    def repair_fields(self) -> list[str]:
        """Mend memories whose fields hold a value of the wrong type (store/field_types.py); returns
        what was changed, one line each."""
        return self.store.repair_fields()

    def team_check(self, project: str | None = None) -> list[tuple[str, bool, str]]:
        """``[("team", ok, detail)]`` when a team store is set (reachable with its size, model and
        schema, or the failure named), and whether this role has a grant for ``project``; empty
        when none is set."""
        return self._stores.check(project)

    def shared_project(self, project: str | None) -> str:
        """The project string grants name for a local project path (its portable identity)."""
        return self.project_id(project) or ""

    def grant_sql(self, role: str, project: str | None, curate: bool = False) -> str:
        """What the team store's owner runs to grant ``role`` the project at ``project`` (a path)."""
        from captain_memo.store.postgres.store import grant_sql

        return grant_sql(role, self.shared_project(project), curate)

    @_translated
    def stats(self) -> dict:
        """Counts by kind (every kind named) and the Tide lifecycle of observations."""
        from captain_memo.engine.stats import tide_counts
        from captain_memo.records import KINDS

        counts = self.store.counts()
        data = {
            "database": str(self.path),
            **counts,
            **{kind: counts.get(kind, 0) for kind in KINDS},
            "tide": tide_counts(self.store.list_memories(kind="observation", limit=-1)),
        }
        if (team := self._stores.stats()) is not None:
            data["team"] = team
        return data

    # -- the database file --------------------------------------------------------------

    def backup(self, target: Path, replace: bool = False, folder: bool = False) -> Path:
        """A consistent, checked copy of this database (store/backup.py); returns the file written.
        ``folder``: ``target`` names a folder (to make if missing) for a dated file."""
        from captain_memo.store.backup import backup as copy

        return copy(self.path, target, replace=replace, folder=folder)

    def restore(self, backup_file: Path) -> Path | None:
        """Put the backup ``backup_file`` in place of this database (store/backup.py); returns where
        the store it replaced is kept, None when there was none. Call it on a Memo not yet used."""
        from captain_memo.store.backup import restore as put_back

        return put_back(backup_file, self.path)


def written_file_needs_store(path: str, project: str | None, branch: str | None, store: Path) -> bool:
    """Whether ``Memo.index_written`` would open the store at ``store`` for ``path``: only for a
    note, under a configured folder or beside a store that exists. A cheap look first (most files
    written are not notes), so a holder can skip the store's threads for them."""
    from captain_memo.sources import index_plan

    return index_plan.written_file_needs_store(path, project, branch, store)


def nothing_indexed() -> IndexReport:
    """The report of a written file that was not re-indexed (no store was needed for it)."""
    from captain_memo.sources.index_report import IndexReport

    return IndexReport()


def readable_error(exc: Exception, path: Path | str):
    """A SQLite failure as the store's readable error naming ``path`` and what to do; None for
    anything else. For front ends that hold a Memo across requests (its methods translate already)."""
    from captain_memo.store.db import store_error

    return store_error(exc, path)


def health_probes(embed_config, context: str | None, share_worktrees: bool) -> dict[str, Callable[[], str]]:
    """What Captain Memo depends on, each probed without opening a store (engine/probes.py), for the
    editor's health check: package, sqlite, sqlite-vec, fts5, embedding (``embed_config``'s embedder)
    and repository (the one at ``context``). A probe returns one line when it works, raises when not."""
    from captain_memo.engine import probes

    return {
        "package": probes.package,
        "sqlite": probes.sqlite,
        "sqlite-vec": probes.sqlite_vec,
        "fts5": probes.fts5,
        "embedding": functools.partial(probes.embedding, embed_config),
        "repository": functools.partial(probes.repository, context, share_worktrees),
    }


def embedding_server(host: str, port: int, threads: int | None, model_name: str | None, api_key: str | None):
    """The built-in model behind an HTTP server (embeddings/server.py), not yet serving."""
    from captain_memo.embeddings.http_server import make_server
    from captain_memo.embeddings.local import LocalEmbedder

    return make_server(LocalEmbedder(threads=threads), host, port, model_name, api_key)
