"""Plain records that cross module boundaries: a memory, what is about to be stored, its source, its chunks."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from captain_memo.config import RankConfig

from captain_memo.kinds import KINDS  # noqa: F401 - part of the records' vocabulary
from captain_memo.units import DAY  # noqa: F401 - part of the records' vocabulary


@dataclass(frozen=True)
class Source:
    """Where a memory came from: a file and line range, a commit, and how it was captured."""

    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    commit: str | None = None
    origin: str = "cli"  # cli | editor | file | git | import | mcp:<client name> (an agent saved it)
    filetype: str | None = None

    def describe(self) -> str:
        where = self.origin
        if self.path:
            lines = ""
            if self.line_start:
                lines = f":{self.line_start}" + (
                    f"-{self.line_end}" if self.line_end and self.line_end != self.line_start else ""
                )
            where = self.path + lines
        elif self.commit:
            where = f"commit {self.commit[:10]}"
        # What an agent saved says so wherever its source is shown (results, the editor's float).
        if self.origin.startswith("mcp") and where != self.origin:
            return f"{where} · {self.origin}"
        return where


@dataclass(frozen=True)
class NewMemory:
    """A memory about to be stored; ``chunks`` are the texts to index (derived when empty)."""

    body: str
    kind: str = "memory"
    title: str = ""
    project: str | None = None
    branch: str | None = None
    source: Source = field(default_factory=Source)
    created_at: float | None = None
    source_key: str | None = None
    tags: tuple[str, ...] = ()
    chunks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Memory:
    id: int
    kind: str
    title: str
    body: str
    created_at: float
    updated_at: float
    project: str | None
    branch: str | None
    source: Source
    content_hash: str
    superseded_by: int | None
    stability: float
    last_surfaced: float | None
    opened_in_full: bool
    source_key: str | None = None
    tags: tuple[str, ...] = ()
    last_opened: float | None = None  # Tide's use clock: when it was last opened in full

    @property
    def display_title(self) -> str:
        if self.title:
            return self.title
        first = self.body.strip().splitlines()[0] if self.body.strip() else ""
        return first[:80]


@dataclass(frozen=True)
class Chunk:
    id: int
    memory_id: int
    seq: int
    text: str
    content_hash: str


class Leg(str, Enum):
    """A search leg. A str enum: ``Leg.VECTOR == "vector"``, as recall traces and JSON name them."""

    VECTOR = "vector"
    KEYWORD = "keyword"

    def __str__(self) -> str:
        return self.value


BOTH_LEGS = (Leg.VECTOR, Leg.KEYWORD)


class Surfacing(str, Enum):
    """How a memory came to the user's eyes; Tide strengthens it by a gain for each (config.py)."""

    AUTO = "auto"  # shown without being asked (hover, hint)
    SEARCH = "search"  # in a result list the user asked for
    OPEN = "open"  # opened in full

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class RecallRequest:
    """One recall: the query and where it is asked from, and how to run it.

    ``limit`` None means the profile's result limit; ``record`` False leaves Tide untouched (the
    evaluation, a hint count); ``cfg`` overrides ``profile`` with a whole ranking configuration.
    """

    query: str
    project: str | None = None
    branch: str | None = None
    limit: int | None = None
    profile: str | None = None
    all_projects: bool = False
    how: Surfacing = Surfacing.SEARCH
    record: bool = True
    legs: tuple[Leg, ...] = BOTH_LEGS
    cfg: RankConfig | None = None


@dataclass(frozen=True)
class Superseded:
    """A superseded memory: its id, the memory that replaced it, whether that was automatic, its title."""

    old_id: int
    new_id: int
    automatic: bool
    title: str


# -- the JSON form of the records, one place for every front end (doc/json.md) -----------------


def source_json(source: Source, label: bool = False) -> dict:
    """A source as JSON; ``label`` adds the one-line description lists show (a recall hit, the editor)."""
    data = {
        "path": source.path,
        "line_start": source.line_start,
        "line_end": source.line_end,
        "commit": source.commit,
        "origin": source.origin,
        "filetype": source.filetype,
    }
    if label:
        data["label"] = source.describe()
    return data


def memory_json(m: Memory) -> dict:
    """A memory in full as JSON (`show --json`, the editor's open, a recall hit's memory)."""
    return {
        "id": m.id,
        "kind": m.kind,
        "title": m.title,
        "body": m.body,
        "created_at": m.created_at,
        "updated_at": m.updated_at,
        "project": m.project,
        "branch": m.branch,
        "source": source_json(m.source),
        "superseded_by": m.superseded_by,
        "stability": m.stability,
        "last_surfaced": m.last_surfaced,
        "opened_in_full": m.opened_in_full,
        "tags": list(m.tags),
    }
