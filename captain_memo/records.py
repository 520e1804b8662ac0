"""Plain records that cross module boundaries: a memory, what is about to be stored, its source, its chunks."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from captain_memo.config import RankConfig

from captain_memo.base.kinds import KINDS  # noqa: F401 - part of the records' vocabulary
from captain_memo.base.units import DAY  # noqa: F401 - part of the records' vocabulary

# Which store a memory lives in. Ids are per store, so a team memory is written with a ``t`` before
# its id (``t12``) wherever a person or a front end names it: ``show t12``, ``supersede 7 t12``.
LOCAL = "local"
TEAM = "team"
TEAM_PREFIX = "t"


@dataclass(frozen=True)
class RuleScope:
    """Where an agent's rule applies, as its front matter says: always (Cursor's ``alwaysApply``, a
    Claude Code rule without ``paths``), or to the files its globs match (``globs``, ``applyTo``,
    ``paths``). A file without one (AGENTS.md, a Cursor rule picked by its description) has none:
    recall alone decides when it is shown."""

    always: bool = False
    globs: tuple[str, ...] = ()

    def describe(self) -> str:
        return "always applies" if self.always else "applies to " + ", ".join(self.globs)

    def stored(self) -> str:
        """The store's text for it: ``always``, or the globs one a line (a glob holds no newline)."""
        return ALWAYS_APPLIES if self.always else "\n".join(self.globs)

    @classmethod
    def from_stored(cls, text: str | None) -> RuleScope | None:
        if not text:
            return None
        return cls(always=True) if text == ALWAYS_APPLIES else cls(globs=tuple(text.split("\n")))

    def to_json(self) -> dict:
        return {"always": self.always, "globs": list(self.globs)}


ALWAYS_APPLIES = "always"


@dataclass(frozen=True)
class Source:
    """Where a memory came from: a file and line range, a commit, and how it was captured."""

    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    commit: str | None = None
    origin: str = "cli"  # cli | editor | file | git | import | mcp:<client name> (an agent saved it)
    filetype: str | None = None
    rule_scope: RuleScope | None = None  # an agent's rule: where it applies (kept in the local store only)

    def describe(self) -> str:
        where = self.origin
        if self.path:
            lines = ""
            if self.line_start and self.line_start >= 1:  # no line 0 or -5: unknown lines are not shown
                lines = f":{self.line_start}" + (
                    f"-{self.line_end}" if self.line_end and self.line_end > self.line_start else ""
                )
            where = self.path + lines
        elif self.commit:
            where = f"commit {self.commit[:10]}"
        # What an agent saved says so wherever its source is shown (results, the editor's float).
        if self.origin.startswith("mcp") and where != self.origin:
            where = f"{where} · {self.origin}"
        # A rule says where it applies wherever it is shown (a hit, the hook's line, the editor).
        return f"{where} · {self.rule_scope.describe()}" if self.rule_scope else where


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
    touched: tuple[str, ...] = ()  # every path a commit touched (store/touched.py), searchable


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
    superseded_by_team: int | None = None  # a local memory superseded by a team memory (its team id)
    store: str = LOCAL  # LOCAL or TEAM: the store it was read from
    author: str | None = None  # the role that wrote a team memory (None for this machine's own)

    @property
    def ref(self) -> str:
        """How it is named across both stores: ``12`` for a local memory, ``t12`` for a team one."""
        return str(MemoryRef(self.store, self.id))

    def as_new(self) -> NewMemory:
        """Its text, kind, place and date as a memory to store elsewhere (publishing it)."""
        return NewMemory(
            body=self.body,
            kind=self.kind,
            title=self.title,
            project=self.project,
            branch=self.branch,
            source=self.source,
            created_at=self.created_at,
            tags=self.tags,
        )

    @property
    def superseded_ref(self) -> str | None:
        """The memory that superseded it, named across both stores; None when it is current."""
        if self.superseded_by is not None:
            return str(MemoryRef(self.store, self.superseded_by))
        if self.superseded_by_team is not None:
            return str(MemoryRef(TEAM, self.superseded_by_team))
        return None

    @property
    def display_title(self) -> str:
        if self.title:
            return self.title
        first = self.body.strip().splitlines()[0] if self.body.strip() else ""
        return first[:80]


@dataclass(frozen=True)
class MemoryRef:
    """A memory named across both stores: the store and its id there."""

    store: str
    id: int

    def __str__(self) -> str:
        return f"{TEAM_PREFIX}{self.id}" if self.store == TEAM else str(self.id)

    @property
    def team(self) -> bool:
        return self.store == TEAM


def parse_ref(text: str | int) -> MemoryRef:
    """``12`` or ``#12`` (local), ``t12`` or ``#t12`` (team); ValueError naming the text otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        return MemoryRef(LOCAL, text)
    raw = str(text).strip().lstrip("#")
    store = LOCAL
    if raw[:1].lower() == TEAM_PREFIX:
        store, raw = TEAM, raw[1:]
    digits = raw[1:] if raw[:1] == "-" and store == LOCAL else raw  # a negative id is simply not found
    if not digits.isdigit() or not digits.isascii():
        raise ValueError(f"{text!r} is not a memory id: give a number (12) or a team memory's t and number (t12)")
    return MemoryRef(store, int(raw))


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
    data: dict[str, object] = {
        "path": source.path,
        "line_start": source.line_start,
        "line_end": source.line_end,
        "commit": source.commit,
        "origin": source.origin,
        "filetype": source.filetype,
    }
    if source.rule_scope is not None:  # only a rule has one: every other source's JSON is as before
        data["rule_scope"] = source.rule_scope.to_json()
    if label:
        data["label"] = source.describe()
    return data


def json_id(m: Memory) -> int | str:
    """A memory's id in JSON: a number for a local memory (as always), ``"t12"`` for a team one."""
    return m.id if m.store == LOCAL else m.ref


def json_superseded_by(m: Memory) -> int | str | None:
    """What superseded a memory, in JSON: a number for a local memory (as always), ``"t12"`` for a
    team one; None when it is current."""
    if m.store == LOCAL and m.superseded_by is not None:
        return m.superseded_by
    return m.superseded_ref


def memory_json(m: Memory) -> dict:
    """A memory in full as JSON (`show --json`, the editor's open, a recall hit's memory)."""
    return {
        "id": json_id(m),
        "kind": m.kind,
        "title": m.title,
        "body": m.body,
        "created_at": m.created_at,
        "updated_at": m.updated_at,
        "project": m.project,
        "branch": m.branch,
        "source": source_json(m.source),
        "superseded_by": json_superseded_by(m),
        "store": m.store,
        "author": m.author,
        "stability": m.stability,
        "last_surfaced": m.last_surfaced,
        "opened_in_full": m.opened_in_full,
        "tags": list(m.tags),
    }
