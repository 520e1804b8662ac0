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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from captain_memo.records import TEAM, Memory, MemoryRef, NewMemory, RecallRequest, Superseded, parse_ref

if TYPE_CHECKING:
    from captain_memo.sources.index_report import IndexReport

# doctor's and stats' look at the team store: long enough to connect (store/postgres CONNECT_TIMEOUT_S),
# short of the 30 s a save waits for a store coming back, so a store that is down is reported promptly.
TEAM_CHECK_S = 6.0


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


@dataclass(frozen=True)
class IndexOutcome:
    """What ``Memo.index`` did: the notes report and, when asked, the git history report."""

    notes: IndexReport
    git: IndexReport | None  # None without --git
    max_commits: int  # the cap on new commits read that was in force
    team: IndexReport | None = None  # the repository's note folders, indexed into the team store
    # Plain runs in a repository: what was read, and what looks like notes but was not.
    looked_in: tuple[str, ...] = ()  # the configured and remembered folders, as the user names them
    found: tuple = ()  # sources.discovery.Found: documentation-like folders nothing reads
    remembered: tuple[str, ...] = ()  # folders named in this run, remembered for plain runs from now on

    @property
    def files(self) -> int:
        return self.notes.files + (self.team.files if self.team else 0)


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

    def _team_or_refuse(self, what: str):
        if self.team is None:
            from captain_memo.errors import InputError

            raise InputError(f"{what} needs a team store: set CAPTAIN_MEMO_TEAM_DB=postgresql://... (doc/team.md)")
        return self.team

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
        first, as numbers, then team ids (``"t12"``)."""
        from captain_memo.records import Leg, Surfacing, json_id

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

    @_translated
    def remember(self, memory: NewMemory) -> int:
        return self.engine.remember(memory)

    @_translated
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
        ref = self.ref(memory_id)
        if ref.team:
            return _in_team(self._team_or_refuse(f"reading {ref}").call(f"reading {ref}", _team_get, ref.id))
        return self.store.get(ref.id)

    @_translated
    def chunk_texts(self, memory_id: int | str | MemoryRef) -> list[str]:
        """A memory's chunks' texts in order (what ``show 12:310`` finds a line in)."""
        ref = self.ref(memory_id)
        if ref.team:
            chunks = self._team_or_refuse(f"reading {ref}").call(f"reading {ref}", _team_chunks, ref.id)
        else:
            chunks = self.store.chunks_of(ref.id)
        return [chunk.text for chunk in chunks]

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
    def list_memories(
        self,
        project: str | None = None,
        all_projects: bool = True,
        kind: str | None = None,
        limit: int = 100,
        before: tuple[float, int] | None = None,
    ) -> list[Memory]:
        """Newest first; ``all_projects`` False keeps ``project``'s memories and personal notes;
        ``before``: the page after the memory saved at that (created_at, id)."""
        return self.store.list_memories(project, all_projects=all_projects, kind=kind, limit=limit, before=before)

    @_translated
    def list_team_memories(self, project: str | None, limit: int = 100) -> list[Memory]:
        """The team store's newest memories of ``project`` (and its notes for no project)."""
        team = self._team_or_refuse("listing team memories")
        found = team.call("listing team memories", _team_list, self.project_id(project), limit, timeout=team.timeout)
        return [_in_team(memory) for memory in found]

    @_translated
    def forget(self, memory_id: int | str) -> None:
        ref = self.ref(memory_id)
        if ref.team:
            self._team_or_refuse(f"forgetting {ref}").call(
                f"forgetting {ref}", _team_forget, ref.id, missing_is_done=True
            )
        else:
            self.store.delete(ref.id)

    @_translated
    def supersede(self, old_id: int | str, new_id: int | str) -> None:
        """``old`` is out of date, ``new`` replaces it. A team memory is superseded only by a team
        memory (what everyone reads cannot point into one person's store); a local memory by either."""
        from captain_memo.errors import InputError

        old, new = self.ref(old_id), self.ref(new_id)
        if old.team and not new.team:
            raise InputError(
                f"a team memory can be superseded only by a team memory: publish {new} first"
                f" (captain-memo publish {new}), then supersede {old} by the team id it gets"
            )
        if old.team:
            self._team_or_refuse(f"superseding {old}").call(f"superseding {old}", _team_supersede, old.id, new.id)
        elif new.team:
            self.get(new)  # NotFoundError when the team store has no such memory
            self.store.set_superseded_by_team(old.id, new.id)
        else:
            self.engine.supersede(old.id, new.id)

    @_translated
    def unsupersede(self, old_id: int | str) -> str | None:
        """Make ``old_id`` current again; what superseded it (``12`` or ``t12``), None when it was not
        superseded (nothing changed)."""
        old = self.ref(old_id)
        if old.team:
            team = self._team_or_refuse(f"reviving {old}")
            previous = team.call(f"reviving {old}", _team_unsupersede, old.id)
            return None if previous is None else str(MemoryRef(TEAM, previous))
        by_team = self.store.get(old.id).superseded_by_team
        if by_team is not None:
            self.store.set_superseded_by_team(old.id, None)
            return str(MemoryRef(TEAM, by_team))
        previous = self.engine.unsupersede(old.id)
        return None if previous is None else str(previous)

    # -- the team store -----------------------------------------------------------------

    @_translated
    def remember_team(self, memory: NewMemory) -> MemoryRef:
        """Store a memory in the team store, under its project's portable identity; its reference
        (``t12``). An exact copy already there is not stored twice: its reference comes back."""
        from captain_memo.errors import InputError
        from captain_memo.sources.settings import personal_agent_file

        if personal_agent_file(memory.source.path):
            raise InputError(
                f"not saved to the team store: {memory.source.path} holds a developer's own instructions "
                "(CLAUDE.local.md); it stays in this store"
            )
        team = self._team_or_refuse("saving to the team store")
        shared = replace(memory, project=self.project_id(memory.project))
        return MemoryRef(TEAM, team.call("saving a memory", _team_remember, shared))

    @_translated
    def publish(self, memory_id: int | str, keep: bool = False) -> MemoryRef:
        """Move a local memory to the team store (``keep``: copy it, the local one marked superseded
        by the team copy); its team reference. Local memories it superseded, and that superseded it,
        keep their links: those that pointed to it point to the team copy."""
        from captain_memo.errors import InputError

        ref = self.ref(memory_id)
        if ref.team:
            raise InputError(f"{ref} is in the team store already")
        published = self.remember_team(self.store.get(ref.id).as_new())
        for older in self.store.superseded_by_ids(ref.id):
            self.store.set_superseded_by_team(older, published.id)
        if keep:
            self.store.set_superseded_by_team(ref.id, published.id)
        else:
            self.store.delete(ref.id)
        return published

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
        repository's new commits too. InputError when there is nothing to index."""
        from captain_memo.errors import InputError
        from captain_memo.sources.git_history import index_history
        from captain_memo.sources.index_report import IndexReport
        from captain_memo.sources.indexer import configured_folders, index_folders, named_folders
        from captain_memo.sources.settings import source_settings

        settings = source_settings()
        folders = named_folders(paths, settings, branch) if paths else configured_folders(settings=settings)
        named_before = [] if paths else self._remembered(folders)
        folders += [] if paths else self._gone_agent_files(folders)
        if branch:
            folders = [f if f.personal else replace(f, branch=branch) for f in folders]
            named_before = [replace(f, branch=branch) for f in named_before]
        if not paths and not folders and not git:
            raise InputError("nothing to index: not inside a git repository and CAPTAIN_MEMO_NOTE_DIRS is not set")
        self.store.require_writable()  # before any text is embedded for nothing
        # With a team store, the repository's own note folders (decisions, skills) are shared:
        # indexed there under the project's portable identity; personal folders and folders named on
        # the command line stay here.
        shared = [f for f in folders if f.shared] if self.team is not None and not paths else []
        local = [f for f in folders if f not in shared] + named_before
        notes = index_folders(self.engine, local, settings, show_progress=show_progress) if local else IndexReport()
        team = self._index_team(shared, settings, show_progress) if shared else None
        history = (
            index_history(self.engine, settings=settings, show_progress=show_progress, max_commits=max_commits)
            if git
            else None
        )
        outcome = IndexOutcome(notes, history, max_commits or settings.git_max_commits, team)
        if paths:
            return replace(outcome, remembered=self._remember_named(folders))
        return replace(outcome, looked_in=_looked_in(folders + named_before), found=_unindexed(folders + named_before))

    def _remembered(self, folders) -> list:
        """The folders named before in the repository these configured folders belong to."""
        from captain_memo.sources.remembered import remembered_folders

        repository = next((f for f in folders if not f.personal and f.root is not None), None)
        if repository is None or not self.path.exists():  # no store yet: nothing was named
            return []
        return remembered_folders(self.store, repository.root, repository.project, repository.branch)

    def _gone_agent_files(self, folders) -> list:
        """Agent files deeper in the tree that were indexed and that git no longer lists (a new
        file deleted before it was committed): as folders to index, so their memories go."""
        from captain_memo.sources.folders import Folder
        from captain_memo.sources.settings import AGENT_FILE_NAMES

        repository = next((f for f in folders if not f.personal and f.root is not None), None)
        if repository is None or not self.path.exists():
            return []
        listed = {f.path for f in folders}
        root = repository.root
        return [
            Folder(root / path, "memory", repository.project, repository.branch, root)
            for path in self.store.file_states(repository.project)
            if "/" in path and Path(path).name in AGENT_FILE_NAMES and root / path not in listed
        ]

    def _remember_named(self, folders) -> tuple[str, ...]:
        """Remember the repository folders just named (not the working tree's root: `index .` is a
        sweep, not a folder of notes); the paths newly remembered."""
        from captain_memo.sources.remembered import relative, remember

        named = [f for f in folders if f.named and f.path.is_dir() and f.path != f.root]
        return tuple(relative(f) for f in remember(self.store, named)) if named else ()

    @_translated
    def forget_folder(self, path: str) -> tuple[str, int]:
        """Stop refreshing a folder named before, and remove the memories indexed from it:
        (its path in the repository, how many memories went). InputError when it was not named."""
        from captain_memo.errors import InputError
        from captain_memo.sources.indexer import folder_for, forget_indexed
        from captain_memo.sources.remembered import forget, relative
        from captain_memo.sources.settings import source_settings

        folder = folder_for(Path(path).expanduser().resolve(), source_settings())
        if folder.root is None or not self.path.exists() or not forget(self.store, folder):
            raise InputError(
                f"{path} is not a folder indexed by name in a repository (see `captain-memo index --list`)"
            )
        return relative(folder), forget_indexed(self.engine, [folder])

    def index_sources(self) -> dict:
        """What a plain `index` here reads: each folder with its kind, where it comes from and its
        notes; and the documentation-like folders it does not read."""
        from captain_memo.sources.folders import note_files
        from captain_memo.sources.indexer import configured_folders
        from captain_memo.sources.settings import source_settings

        folders = configured_folders(settings=source_settings())
        named = self._remembered(folders)
        rows = []
        for folder in folders + named:
            exists = folder.path.exists()
            rows.append(
                {
                    "path": shown_folder(folder),
                    "kind": folder.kind,
                    "from": "personal" if folder.personal else "named before" if folder.named else "built in",
                    "exists": exists,
                    "files": len(note_files(folder).files) if exists else 0,
                }
            )
        root = next((f.root for f in folders if f.root is not None), None)
        return {
            "repository": str(root) if root else None,
            "folders": rows,
            "found": [f.to_json() for f in _unindexed(folders + named)],
        }

    @_translated
    def index_written(self, path: str, project: str | None, branch: str | None):
        """Re-index one file just written (an IndexReport), into the team store when it lies in a
        repository's note folder and one is set."""
        return index_written_file(lambda: self, path, project, branch)

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
    def index_folder(self, folder, settings):
        """Index one folder (or file) found by the sources: into the team store when it is a
        repository's and one is set, else here."""
        from captain_memo.sources.indexer import index_folders

        if folder.personal or folder.named or self.team is None:
            return index_folders(self.engine, [folder], settings)
        return self._index_team([folder], settings, show_progress=False)

    def _index_team(self, folders, settings, show_progress: bool):
        """Index repository folders into the team store, then drop this store's copies of them
        (indexed before a team store was set), which would otherwise be found twice."""
        from captain_memo.engine.team import INDEX_TIMEOUT
        from captain_memo.sources.indexer import forget_indexed

        shared = [replace(f, project=self.project_id(f.project)) for f in folders]
        report = self.team.call(
            "indexing the repository's notes", _team_index, shared, settings, show_progress, timeout=INDEX_TIMEOUT
        )
        forget_indexed(self.engine, folders)
        return report

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
        raises: a failure is a failed check); ``project``: the caller's, whose grant is checked."""
        return doctor(self.path) + self.team_check(project)

    @_translated
    def repair_fields(self) -> list[str]:
        """Mend memories whose fields hold a value of the wrong type (store/field_types.py); returns
        what was changed, one line each."""
        return self.store.repair_fields()

    def team_check(self, project: str | None = None) -> list[tuple[str, bool, str]]:
        """``[("team", ok, detail)]`` when a team store is set (reachable with its size, model and
        schema, or the failure named), and whether this role has a grant for ``project``; empty
        when none is set."""
        from captain_memo.errors import CaptainMemoError

        if self.team is None:
            return []
        try:
            checks = [("team", True, self.team.call("checking the team store", _team_health, timeout=TEAM_CHECK_S))]
            if (problem := self.team.grant_check(project)) is not None:
                checks.append(("team grant", False, problem))
            return checks
        except CaptainMemoError as exc:
            return [("team", False, f"{exc}; recall answers from the local store meanwhile")]

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
        if self.team is not None:
            data["team"] = self._team_stats()
        return data

    def _team_stats(self) -> dict:
        """What the team store holds that this user may read (its policies decide), or why it
        could not be counted; the local figures stand either way."""
        from captain_memo.errors import CaptainMemoError
        from captain_memo.records import KINDS

        assert self.team is not None
        try:
            counts = self.team.call("counting the team store", _team_counts, timeout=TEAM_CHECK_S)
        except CaptainMemoError as exc:
            return {"error": str(exc)}
        return {key: counts.get(key, 0) for key in ("memories", *KINDS, "chunks", "vectors", "pending_vectors")}


def _in_team(memory: Memory) -> Memory:
    return replace(memory, store=TEAM)


# What runs on the team store's worker thread, given its engine (team.py's TeamClient.call).


def _team_get(engine, memory_id: int) -> Memory:
    return engine.store.get(memory_id)


def _team_chunks(engine, memory_id: int) -> list:
    return engine.store.chunks_of(memory_id)


def _team_list(engine, project: str | None, limit: int) -> list[Memory]:
    return engine.store.list_memories(project, all_projects=False, limit=limit)


def _team_forget(engine, memory_id: int) -> None:
    engine.forget(memory_id)


def _team_supersede(engine, old_id: int, new_id: int) -> None:
    engine.supersede(old_id, new_id)


def _team_unsupersede(engine, old_id: int) -> int | None:
    return engine.unsupersede(old_id)


def _team_remember(engine, memory: NewMemory) -> int:
    """The new memory's team id, or that of the exact copy already stored."""
    from captain_memo.base.chunking import content_hash

    (stored,) = engine.remember_many([memory])
    if stored is None:
        clean, _ = engine.prepare(memory)
        stored = engine.store.find_by_hash(content_hash(clean.kind, clean.title, clean.body), clean.project)
    return stored


def _team_index(engine, folders, settings, show_progress: bool):
    from captain_memo.sources.indexer import index_folders

    return index_folders(engine, folders, settings, show_progress=show_progress, follow=False)


def left_out(report) -> str:
    """What an index run left out of the notes and why, for its summary line ('' for nothing)."""
    from captain_memo.sources.index_report import left_out as notes_left_out

    return notes_left_out(report)


def history_left_out(history, cap: int) -> str:
    """What an index run left out of the git history and why ('' for nothing)."""
    from captain_memo.sources.index_report import history_left_out as commits_left_out

    return commits_left_out(history, cap)


def is_identifier(token: str) -> bool:
    """Whether ``token`` looks like code (an identifier, a dotted name, a constant): what a hint counts."""
    from captain_memo.ranking.query import is_code_shaped

    return is_code_shaped(token)


def shown_url(url: str) -> str:
    """A connection string or endpoint URL as it may be printed: no user, password or parameter values."""
    from captain_memo.base.urls import masked_url

    return masked_url(url)


def index_written_file(
    open_memo: Callable[[], Memo], path: str, project: str | None, branch: str | None, store: Path | None = None
):
    """Re-index one file just written (an IndexReport). Outside the configured folders the store
    (at ``store``, when the caller knows it before opening it) is read only for a note, and only when
    it exists already (to look for folders named before): writing any other file opens (or creates)
    no database."""
    from captain_memo.sources.index_report import IndexReport
    from captain_memo.sources.indexer import written_folder
    from captain_memo.sources.settings import source_settings

    settings = source_settings()
    folder = written_folder(path, project, branch, settings)
    if folder is not None:
        return open_memo().index_folder(folder, settings)
    if store is not None and not Path(store).exists():
        return IndexReport()
    memo, folder = _named_folder_of(open_memo, path, project, branch)
    return IndexReport() if folder is None else memo.index_folder(folder, settings)


def written_file_needs_store(path: str, project: str | None, branch: str | None, store: Path) -> bool:
    """Whether ``index_written_file`` would open the store at ``store`` for ``path``: only for a
    note, under a configured folder or beside a store that exists. A cheap look first (most files
    written are not notes), so a holder can skip the store's threads for them."""
    from captain_memo.sources.folders import is_note
    from captain_memo.sources.indexer import written_folder
    from captain_memo.sources.settings import source_settings

    if not is_note(Path(path).expanduser()):
        return False
    return Path(store).exists() or written_folder(path, project, branch, source_settings()) is not None


def nothing_indexed():
    """The report of a written file that was not re-indexed (no store was needed for it)."""
    from captain_memo.sources.index_report import IndexReport

    return IndexReport()


def _named_folder_of(open_memo: Callable[[], Memo], path: str, project: str | None, branch: str | None):
    """(the Memo, the one-file folder) for a note written under a folder named before, else (None, None)."""
    from captain_memo.sources.folders import is_note, repository_root
    from captain_memo.sources.remembered import remembered_folder_of

    file = Path(path).expanduser()
    root = repository_root(file.parent) if is_note(file) else None
    if root is None:
        return None, None
    memo = open_memo()
    if not memo.path.exists():
        return None, None
    if project is None:
        from captain_memo.base.git_context import git_context

        ctx = git_context(root)
        project, branch = ctx.project, branch or ctx.branch
    return memo, remembered_folder_of(memo.store, file.resolve(), root.resolve(), project, branch)


def shown_folder(folder) -> str:
    """A folder as the user names it: ``doc/`` in a repository, ``~/notes/`` at home, a file as is."""
    from captain_memo.sources.folders import is_note

    if folder.root is not None and not folder.personal:
        where = folder.stored_path(folder.path)
    else:
        home = Path.home()
        where = "~/" + folder.path.relative_to(home).as_posix() if home in folder.path.parents else str(folder.path)
    return where if is_note(folder.path) or where.endswith("/") else where + "/"


def _looked_in(folders) -> tuple[str, ...]:
    from captain_memo.sources.discovery import looked_in

    return looked_in([(f, shown_folder(f)) for f in sorted(folders, key=lambda f: f.kind != "memory")])


def _unindexed(folders) -> tuple:
    """Documentation-like folders of the repository that none of ``folders`` reads."""
    from captain_memo.sources.discovery import unindexed_folders

    root = next((f.root for f in folders if f.root is not None and not f.personal), None)
    return tuple(unindexed_folders(root, folders)) if root is not None else ()


def readable_error(exc: Exception, path: Path | str):
    """A SQLite failure as the store's readable error naming ``path`` and what to do; None for
    anything else. For front ends that hold a Memo across requests (its methods translate already)."""
    from captain_memo.store.db import store_error

    return store_error(exc, path)


def _team_counts(engine) -> dict[str, int]:
    return engine.store.counts()


def _team_health(engine) -> str:
    """The team store answered (its model accepted when the engine was opened): its size, model and
    schema version."""
    store = engine.store
    counts = store.counts()
    version = store.schema_version()
    schema = f", schema {version}" if version is not None else ""
    memories, chunks = counts["memories"], counts["chunks"]
    return (
        f"reachable: {memories} memor{'y' if memories == 1 else 'ies'}, {chunks} chunk{'s' * (chunks != 1)}, "
        f"model {store.meta('embed_model') or 'none yet'}{schema}"
    )


def doctor(path: Path | str) -> list[tuple[str, bool, str]]:
    """(item, ok, detail) for SQLite, sqlite-vec, FTS5, the file's integrity and permissions, the
    model and the counts; a check that fails says what to do."""
    from captain_memo.engine.doctor import checks

    return checks(Path(path))


def embedding_server(host: str, port: int, threads: int | None, model_name: str | None, api_key: str | None):
    """The built-in model behind an HTTP server (embeddings/server.py), not yet serving."""
    from captain_memo.embeddings.http_server import make_server
    from captain_memo.embeddings.local import LocalEmbedder

    return make_server(LocalEmbedder(threads=threads), host, port, model_name, api_key)


def backup(source: Path, target: Path, replace: bool = False, folder: bool = False) -> Path:
    """A consistent, checked copy of the database ``source`` (store/backup.py); returns the file
    written. ``folder``: ``target`` names a folder (to make if missing) for a dated file."""
    from captain_memo.store.backup import backup as copy

    return copy(source, target, replace=replace, folder=folder)


def restore(backup_file: Path, target: Path) -> Path | None:
    """Put the backup ``backup_file`` in place of the database ``target`` (store/backup.py); returns
    where the store it replaced is kept, None when there was none."""
    from captain_memo.store.backup import restore as put_back

    return put_back(backup_file, target)
