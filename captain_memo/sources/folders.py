"""Note and skill folders: which exist, which files they hold, and reading a file as text.

A file's stored path is relative to its repository (``docs/decisions/0003-sqlite.md``) so every
clone and worktree agrees on it; a personal note's is its absolute path. Memories are found again
by that path, so it must be computed the same way by `captain-memo index` and by the editor.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass
from pathlib import Path

from captain_memo.sources.settings import NOTE_SUFFIXES, SKILL_FILE, SourceSettings

# Folders never worth walking into: version control, dependencies, build output.
IGNORED_DIRS = {"node_modules", "__pycache__", "venv", ".venv", "target", "build", "dist"}
# A few stray bytes (a pasted Windows-1252 quote) are replaced with U+FFFD and reported; more than
# this means the file is in another encoding altogether and is skipped.
MAX_REPAIRED_BYTES = 3
NUL = b"\x00"


@dataclass(frozen=True)
class Folder:
    """A folder (or single file) to index, with what its files become."""

    path: Path  # absolute
    kind: str  # memory | skill
    project: str | None  # None: personal notes, visible from every project
    branch: str | None
    root: Path | None  # the repository's working tree; stored paths are relative to it
    personal: bool = False

    def stored_path(self, file: Path) -> str:
        if self.root is not None:
            try:
                return file.relative_to(self.root).as_posix()
            except ValueError:
                pass
        return file.as_posix()

    @property
    def prefix(self) -> str:
        """What every stored path under this folder starts with."""
        stored = self.stored_path(self.path)
        single_file = self.path.is_file() or (not self.path.exists() and is_note(self.path))
        return stored if single_file else stored + "/"

    def kind_of(self, file: Path) -> str:
        return "skill" if file.name == SKILL_FILE else self.kind


def repository_root(path: Path) -> Path | None:
    """The working tree holding ``path``, found by looking for ``.git`` (no git process needed)."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def repository_folders(root: Path, project: str | None, branch: str | None,
                       settings: SourceSettings) -> list[Folder]:
    kinds = [(d, "skill") for d in settings.repo_skill_dirs] + [(d, "memory") for d in settings.repo_note_dirs]
    return [Folder(root / rel, kind, project, branch, root) for rel, kind in kinds]


def personal_folders(settings: SourceSettings) -> list[Folder]:
    kinds = [(d, "skill") for d in settings.personal_skill_dirs] + [(d, "memory") for d in settings.personal_note_dirs]
    return [Folder(path, kind, None, None, None, personal=True) for path, kind in kinds]


def is_note(path: Path) -> bool:
    return path.suffix.lower() in NOTE_SUFFIXES and not path.name.startswith(".")


def note_files(folder: Folder) -> list[Path]:
    """Note files under the folder, sorted; hidden and dependency folders are not entered."""
    if folder.path.is_file():
        return [folder.path] if is_note(folder.path) else []
    found: list[Path] = []
    for current, dirs, files in os.walk(folder.path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in IGNORED_DIRS)
        found.extend(Path(current) / name for name in sorted(files) if is_note(Path(name)))
    return found


def folder_of(path: Path, folders: list[Folder]) -> Folder | None:
    """The innermost configured folder holding ``path``."""
    best = None
    for folder in folders:
        if path == folder.path or folder.path in path.parents:
            if best is None or len(folder.path.parts) > len(best.path.parts):
                best = folder
    return best


@dataclass(frozen=True)
class NoteText:
    text: str | None  # None: skipped
    problem: str | None = None  # why it was skipped, or what was repaired


def read_note(path: Path, max_bytes: int) -> NoteText:
    """A note's text, or why it cannot be indexed: too large, binary, or not UTF-8."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return NoteText(None, f"{size:,} bytes, over the {max_bytes:,}-byte cap (CAPTAIN_MEMO_MAX_FILE_BYTES)")
        data = path.read_bytes()
    except OSError as exc:
        return NoteText(None, f"cannot read: {exc.strerror or exc}")
    if NUL in data:
        return NoteText(None, f"binary (NUL byte at offset {data.index(NUL)})")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        return NoteText(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        first = exc.start
    bad = _invalid_bytes(data)
    if bad > MAX_REPAIRED_BYTES:
        return NoteText(None, f"not UTF-8 ({bad} invalid bytes, the first at offset {first})")
    return NoteText(data.decode("utf-8", "replace"),
                    f"repaired {bad} invalid UTF-8 byte{'s' if bad > 1 else ''} (first at offset {first})")


def _invalid_bytes(data: bytes) -> int:
    count = 0
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    position = 0
    while position < len(data):
        try:
            decoder.decode(data[position:], final=True)
            break
        except UnicodeDecodeError as exc:
            count += exc.end - exc.start
            position += exc.end
            decoder.reset()
            if count > MAX_REPAIRED_BYTES:
                break
    return count
