"""Records that cross module boundaries: what is stored about a memory and its chunks."""

from __future__ import annotations

from dataclasses import dataclass, field

from captain_memo.kinds import KINDS  # noqa: F401 - part of the records' vocabulary


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
                lines = f":{self.line_start}" + (f"-{self.line_end}" if self.line_end and self.line_end != self.line_start else "")
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
