"""The local store and the team store as one set of memories, addressed by reference (``12``, ``t12``).

``Memo`` hands every operation that names a memory here: a local reference goes to the local store
or engine, a team reference to the team store through its client (team.py's ``TeamClient``), whose
one worker thread runs the small functions at the bottom of this module on the team store's engine.
Writing to the team store (``remember --team``, ``publish``, indexing a repository's shared notes)
and its counts and health for ``stats`` and ``doctor`` are here too. Without a team store set, a
team reference is refused with what to set.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from captain_memo.errors import CaptainMemoError, InputError
from captain_memo.records import KINDS, TEAM, Memory, MemoryRef, NewMemory

if TYPE_CHECKING:
    from captain_memo.engine.core import Engine
    from captain_memo.engine.team import TeamClient
    from captain_memo.store import Store

# doctor's and stats' look at the team store: long enough to connect (store/postgres CONNECT_TIMEOUT_S),
# short of the 30 s a save waits for a store coming back, so a store that is down is reported promptly.
TEAM_CHECK_S = 6.0


class Local(Protocol):
    """What the fan-out needs of the door: the local store and engine (opened on first use), the
    team client (None when no team store is set) and a project's portable identity."""

    @property
    def store(self) -> Store: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def team(self) -> TeamClient | None: ...

    def project_id(self, project: str | None) -> str | None: ...


class TeamFanout:
    """Each operation on a memory reference sent to the store that holds it."""

    def __init__(self, local: Local):
        self.local = local

    def team_or_refuse(self, what: str) -> TeamClient:
        team = self.local.team
        if team is None:
            raise InputError(f"{what} needs a team store: set CAPTAIN_MEMO_TEAM_DB=postgresql://... (doc/team.md)")
        return team

    def get(self, ref: MemoryRef) -> Memory:
        if ref.team:
            return _in_team(self.team_or_refuse(f"reading {ref}").call(f"reading {ref}", _team_get, ref.id))
        return self.local.store.get(ref.id)

    def chunk_texts(self, ref: MemoryRef) -> list[str]:
        if ref.team:
            chunks = self.team_or_refuse(f"reading {ref}").call(f"reading {ref}", _team_chunks, ref.id)
        else:
            chunks = self.local.store.chunks_of(ref.id)
        return [chunk.text for chunk in chunks]

    def list_team(self, project: str | None, limit: int) -> list[Memory]:
        team = self.team_or_refuse("listing team memories")
        found = team.call(
            "listing team memories", _team_list, self.local.project_id(project), limit, timeout=team.timeout
        )
        return [_in_team(memory) for memory in found]

    def forget(self, ref: MemoryRef) -> None:
        if ref.team:
            self.team_or_refuse(f"forgetting {ref}").call(
                f"forgetting {ref}", _team_forget, ref.id, missing_is_done=True
            )
        else:
            self.local.store.delete(ref.id)

    def supersede(self, old: MemoryRef, new: MemoryRef) -> None:
        """A team memory is superseded only by a team memory (what everyone reads cannot point into
        one person's store); a local memory by either."""
        if old.team and not new.team:
            raise InputError(
                f"a team memory can be superseded only by a team memory: publish {new} first"
                f" (captain-memo publish {new}), then supersede {old} by the team id it gets"
            )
        if old.team:
            self.team_or_refuse(f"superseding {old}").call(f"superseding {old}", _team_supersede, old.id, new.id)
        elif new.team:
            self.get(new)  # NotFoundError when the team store has no such memory
            self.local.store.set_superseded_by_team(old.id, new.id)
        else:
            self.local.engine.supersede(old.id, new.id)

    def unsupersede(self, old: MemoryRef) -> str | None:
        if old.team:
            team = self.team_or_refuse(f"reviving {old}")
            previous = team.call(f"reviving {old}", _team_unsupersede, old.id)
            return None if previous is None else str(MemoryRef(TEAM, previous))
        store = self.local.store
        by_team = store.get(old.id).superseded_by_team
        if by_team is not None:
            store.set_superseded_by_team(old.id, None)
            return str(MemoryRef(TEAM, by_team))
        previous = self.local.engine.unsupersede(old.id)
        return None if previous is None else str(previous)

    def remember_team(self, memory: NewMemory) -> MemoryRef:
        """Under its project's portable identity; an exact copy already there comes back as it is."""
        from captain_memo.sources.settings import personal_agent_file

        if personal_agent_file(memory.source.path):
            raise InputError(
                f"not saved to the team store: {memory.source.path} holds a developer's own instructions "
                "(CLAUDE.local.md); it stays in this store"
            )
        team = self.team_or_refuse("saving to the team store")
        shared = replace(memory, project=self.local.project_id(memory.project))
        return MemoryRef(TEAM, team.call("saving a memory", _team_remember, shared))

    def publish(self, ref: MemoryRef, keep: bool) -> MemoryRef:
        """Local memories it superseded, and that superseded it, keep their links: those that pointed
        to it point to the team copy."""
        if ref.team:
            raise InputError(f"{ref} is in the team store already")
        store = self.local.store
        published = self.remember_team(store.get(ref.id).as_new())
        for older in store.superseded_by_ids(ref.id):
            store.set_superseded_by_team(older, published.id)
        if keep:
            store.set_superseded_by_team(ref.id, published.id)
        else:
            store.delete(ref.id)
        return published

    def index_team(self, folders, settings, show_progress: bool):
        """Index repository folders into the team store, then drop this store's copies of them
        (indexed before a team store was set), which would otherwise be found twice."""
        from captain_memo.engine.team import INDEX_TIMEOUT
        from captain_memo.sources.indexer import forget_indexed

        shared = [replace(f, project=self.local.project_id(f.project)) for f in folders]
        report = self.team_or_refuse("indexing into the team store").call(
            "indexing the repository's notes", _team_index, shared, settings, show_progress, timeout=INDEX_TIMEOUT
        )
        forget_indexed(self.local.engine, folders)
        return report

    def check(self, project: str | None) -> list[tuple[str, bool, str]]:
        """``[("team", ok, detail)]`` when a team store is set, and whether this role has a grant for
        ``project``; empty when none is set."""
        team = self.local.team
        if team is None:
            return []
        try:
            checks = [("team", True, team.call("checking the team store", _team_health, timeout=TEAM_CHECK_S))]
            if (problem := team.grant_check(project)) is not None:
                checks.append(("team grant", False, problem))
            return checks
        except CaptainMemoError as exc:
            return [("team", False, f"{exc}; recall answers from the local store meanwhile")]

    def stats(self) -> dict | None:
        """What the team store holds that this user may read (its policies decide), or why it could
        not be counted; None when no team store is set."""
        team = self.local.team
        if team is None:
            return None
        try:
            counts = team.call("counting the team store", _team_counts, timeout=TEAM_CHECK_S)
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
