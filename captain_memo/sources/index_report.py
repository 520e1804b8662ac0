"""What an indexing run did, counted: memories indexed, updated, unchanged, removed; files skipped;
and what was left out on purpose, so the summary can say why and which setting changes it
(presentation/index_summary.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class IndexReport:
    indexed: int = 0  # memories stored for the first time
    updated: int = 0  # memories whose text changed (or that moved with a renamed file)
    unchanged: int = 0  # memories whose text is the same: nothing embedded
    removed: int = 0  # memories whose section, file or folder is gone
    skipped: int = 0  # files (or commits) not indexed: ``skipped_files`` plus ``not_notes``
    files: int = 0  # files read
    chunks_embedded: int = 0  # chunk texts sent to the embedder
    skipped_files: tuple[tuple[str, str], ...] = ()  # (path, reason)
    warnings: tuple[tuple[str, str], ...] = ()  # (path, what was repaired or ignored)
    not_notes: tuple[tuple[str, int], ...] = ()  # (kind of file, how many) in note folders, not notes
    left_out: int = 0  # older commits past the cap on commits read

    def __add__(self, other: IndexReport) -> IndexReport:
        kinds = Counter(dict(self.not_notes)) + Counter(dict(other.not_notes))
        summed = [a + b for a, b in zip(self.as_tuple(), other.as_tuple())]
        summed[9] = tuple(sorted(kinds.items()))
        return IndexReport(*summed)

    def as_tuple(self) -> tuple:
        return (
            self.indexed,
            self.updated,
            self.unchanged,
            self.removed,
            self.skipped,
            self.files,
            self.chunks_embedded,
            self.skipped_files,
            self.warnings,
            self.not_notes,
            self.left_out,
        )

    def counts(self) -> str:
        return (
            f"indexed {self.indexed} · updated {self.updated} · unchanged {self.unchanged} · "
            f"removed {self.removed} · skipped {self.skipped}"
        )

    def to_json(self) -> dict:
        return {
            "indexed": self.indexed,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skipped": self.skipped,
            "files": self.files,
            "chunks_embedded": self.chunks_embedded,
            "skipped_files": [{"path": p, "reason": r} for p, r in self.skipped_files],
            "not_notes": dict(self.not_notes),
            "left_out": self.left_out,
            "warnings": [{"path": p, "message": m} for p, m in self.warnings],
        }


@dataclass
class Tally:
    """The mutable counter a run fills in; frozen into an IndexReport at the end."""

    indexed: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    files: int = 0
    chunks_embedded: int = 0
    left_out: int = 0
    skipped_files: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    not_notes: Counter = field(default_factory=Counter)

    def skip(self, path: str, reason: str) -> None:
        self.skipped_files.append((path, reason))

    def note(self) -> str:
        # Short enough to keep the bar on one 80-column line.
        return (
            f"new {self.indexed} upd {self.updated} same {self.unchanged} rm {self.removed} "
            f"skip {len(self.skipped_files) + sum(self.not_notes.values())}"
        )

    def report(self) -> IndexReport:
        return IndexReport(
            self.indexed,
            self.updated,
            self.unchanged,
            self.removed,
            len(self.skipped_files) + sum(self.not_notes.values()),
            self.files,
            self.chunks_embedded,
            tuple(self.skipped_files),
            tuple(self.warnings),
            tuple(sorted(self.not_notes.items())),
            self.left_out,
        )
