"""Note and skill folders: which exist, which files they hold, and reading a file as text.

A file's stored path is relative to its repository (``docs/decisions/0003-sqlite.md``) so every
clone and worktree agrees on it; a personal note's is its absolute path. Memories are found again
by that path, so it must be computed the same way by `captain-memo index` and by the editor.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from captain_memo.base.rule_scope import working_tree as repository_root  # noqa: F401 - the sources' name for it
from captain_memo.sources.settings import NOTE_SUFFIXES, PERSONAL_AGENT_FILES, SKILL_FILE, SourceSettings

# Folders never worth walking into: version control, dependencies, build output.
IGNORED_DIRS = {"node_modules", "__pycache__", "venv", ".venv", "target", "build", "dist"}
# A few stray bytes (a pasted Windows-1252 quote) are replaced with U+FFFD and reported; more than
# this means the file is in another encoding altogether and is skipped.
MAX_REPAIRED_BYTES = 3
NUL = b"\x00"

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec


@dataclass(frozen=True)
class Folder:
    """A folder (or single file) to index, with what its files become."""

    path: Path  # absolute
    kind: str  # memory | skill
    project: str | None  # None: personal notes, visible from every project
    branch: str | None
    root: Path | None  # the repository's working tree; stored paths are relative to it
    personal: bool = False
    # Named on the command line (and remembered): indexed into the local store like any named path.
    named: bool = False

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

    @property
    def shared(self) -> bool:
        """Indexed into a team store when one is set: a repository's own folders, not a personal
        folder, a folder named on the command line nor a developer's own file (CLAUDE.local.md)."""
        return not self.personal and not self.named and self.path.name not in PERSONAL_AGENT_FILES


def repository_folders(root: Path, project: str | None, branch: str | None, settings: SourceSettings) -> list[Folder]:
    kinds = [(d, "skill") for d in settings.repo_skill_dirs] + [(d, "memory") for d in settings.repo_note_dirs]
    return [Folder(root / rel, kind, project, branch, root) for rel, kind in kinds]


def personal_folders(settings: SourceSettings) -> list[Folder]:
    kinds = [(d, "skill") for d in settings.personal_skill_dirs] + [(d, "memory") for d in settings.personal_note_dirs]
    return [Folder(path, kind, None, None, None, personal=True) for path, kind in kinds]


# Text files with a note's suffix that hold no note: dependency pins, licences, build scripts.
NOT_NOTE_NAMES = re.compile(
    r"^(?:.*requirements.*|constraints.*|requires|robots|cmakelists|licen[cs]e.*|copying.*"
    r"|notice|authors|contributors|changelog\.d|top_level|sources|dependency_links"
    r"|entry_points|installed-files)\.txt$",
    re.IGNORECASE,
)
KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def is_note(path: Path) -> bool:
    return (
        path.suffix.lower() in NOTE_SUFFIXES and not path.name.startswith(".") and not NOT_NOTE_NAMES.match(path.name)
    )


def not_note_kind(path: Path) -> str:
    """What a file that is not a note is, for the run's summary: its suffix, or a named kind."""
    if NOT_NOTE_NAMES.match(path.name):
        return (
            "requirements"
            if "requirements" in path.name.lower() or "constraints" in path.name.lower()
            else path.stem.lower()
        )
    return path.suffix.lower() or "no suffix"


def why_not_a_note(path: Path) -> str:
    """One line for a file named explicitly that is not indexed as a note."""
    if NOT_NOTE_NAMES.match(path.name):
        return f"not a note: {path.name} holds {not_note_kind(path)}, not prose"
    if path.name.startswith("."):
        return "not a note: hidden file"
    suffixes = ", ".join(NOTE_SUFFIXES)
    return f"not a note: {path.suffix or 'no suffix'} (notes are {suffixes})"


@dataclass
class Listing:
    """What a folder holds: note files, and what was left out and why."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # files or folders, with the reason
    # Could not be read (permissions, an unmounted share, an I/O error): their memories are kept.
    unreadable: list[Path] = field(default_factory=list)
    not_notes: list[str] = field(default_factory=list)  # the kind of each file that is not a note


def inside(path: Path, boundary: Path) -> bool:
    return path == boundary or boundary in path.parents


def kind_of_file(mode: int) -> str | None:
    """None for a regular file, else what it is (``a FIFO``)."""
    return None if stat.S_ISREG(mode) else KINDS.get(stat.S_IFMT(mode), "not a regular file")


def note_files(folder: Folder) -> Listing:
    """Note files under the folder, sorted, and what was left out.

    Hidden and dependency folders are not entered, nor what .gitignore leaves out (``_build/``,
    ``generated/``; ``ignored_by_git``). A symbolic link is followed only when it
    resolves inside the folder (a link to ``/etc/passwd`` or to ``~/.ssh`` is reported and left
    out); a linked folder is not entered (its files inside are reached where they are). Only
    regular files are read: a FIFO would block and ``/dev/zero`` never ends. A folder that cannot
    be listed is reported as unreadable, not taken for empty.
    """
    listing = Listing()
    try:
        boundary = folder.path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        _unreadable(listing, folder.path, exc)
        return listing
    root = folder.root.resolve() if folder.root is not None else None
    if root is not None and not folder.personal and not inside(boundary, root):
        listing.skipped.append((folder.path, "a symbolic link to outside the repository: not followed"))
        return listing
    try:
        mode = folder.path.stat().st_mode
    except OSError as exc:
        _unreadable(listing, folder.path, exc)
        return listing
    if not stat.S_ISDIR(mode):
        _add_file(listing, folder.path, mode, explicit=True)
        return listing
    _walk(folder.path, boundary, listing, ignored_by_git(folder.path))
    return listing


# Says whether an entry, by its path relative to the folder walked (``docs/_build``), is ignored.
Ignored = Callable[[str, bool], bool]


def ignored_by_git(folder: Path, *within: str) -> Ignored:
    """What .gitignore leaves out below ``folder``: as git itself says inside a work tree (every
    .gitignore up to the repository's top, .git/info/exclude and the user's excludes file), else
    as the folder's own .gitignore files say (read with pathspec). The folder itself is read even
    when a .gitignore above it ignores it: one named on the command line, or configured, is wanted.
    ``within`` (paths relative to the folder) limits what git is asked about."""
    from captain_memo.base.git_commands import listed_files

    listed = listed_files(folder, *within, ignored=True) if repository_root(folder) is not None else None
    if listed is None:
        return _GitignoreFiles(folder).ignored
    ignored = {path.rstrip("/") for path in listed if path != "./"}  # an ignored folder ends with /
    return lambda relative, is_dir: relative in ignored


def walk_leaves_out(folder: Path, file: Path) -> bool:
    """Whether walking ``folder`` leaves ``file`` out (below a hidden or dependency folder, or
    ignored by git): a file the editor saves there is then not indexed either, or the next walk
    would remove what the save stored."""
    try:
        parts = file.relative_to(folder).parts
    except ValueError:
        return False
    if any(part.startswith(".") or part in IGNORED_DIRS for part in parts[:-1]):
        return True
    ignored = ignored_by_git(folder, "/".join(parts))
    return any(ignored("/".join(parts[: depth + 1]), depth < len(parts) - 1) for depth in range(len(parts)))


class _GitignoreFiles:
    """The .gitignore files inside a folder outside any work tree, read as git reads them: the
    deepest file with a pattern matching a path decides (a ``!`` pattern re-includes)."""

    def __init__(self, top: Path):
        self.top = top
        self.specs: dict[str, GitIgnoreSpec | None] = {}  # folder (relative, "" for the top) -> its spec

    def ignored(self, relative: str, is_dir: bool) -> bool:
        parts = relative.split("/")
        for depth in range(len(parts) - 1, -1, -1):  # the deepest .gitignore first
            spec = self._spec("/".join(parts[:depth]))
            if spec is None:
                continue
            below = "/".join(parts[depth:]) + ("/" if is_dir else "")
            decided = spec.check_file(below).include
            if decided is not None:
                return decided
        return False

    def _spec(self, folder: str) -> GitIgnoreSpec | None:
        if folder not in self.specs:
            self.specs[folder] = _read_gitignore(self.top / folder / ".gitignore")
        return self.specs[folder]


def _read_gitignore(path: Path) -> GitIgnoreSpec | None:
    """A .gitignore's patterns, None when there is none (or it cannot be read: nothing ignored)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _unreadable(listing: Listing, path: Path, exc: Exception) -> None:
    why = getattr(exc, "strerror", None) or str(exc)
    listing.unreadable.append(path)
    listing.skipped.append((path, f"cannot read: {why}; what was indexed from it is kept"))


def _add_file(listing: Listing, path: Path, mode: int, explicit: bool = False) -> None:
    kind = kind_of_file(mode)
    if kind is not None:
        listing.skipped.append((path, f"{kind}, not a regular file"))
    elif is_note(path):
        listing.files.append(path)
    elif explicit:
        listing.skipped.append((path, why_not_a_note(path)))
    else:
        listing.not_notes.append(not_note_kind(path))


def _walk(directory: Path, boundary: Path, listing: Listing, ignored: Ignored, relative: str = "") -> None:
    try:
        with os.scandir(directory) as found:
            entries = sorted(found, key=lambda e: e.name)
    except OSError as exc:
        _unreadable(listing, directory, exc)
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        below = f"{relative}{entry.name}"
        try:
            if ignored(below, entry.is_dir(follow_symlinks=False)):
                continue  # neither read nor reported: like node_modules, it holds no one's notes
            if entry.is_symlink():
                target = path.resolve()
                if not inside(target, boundary):
                    listing.skipped.append((path, "a symbolic link to outside the folder: not followed"))
                    continue
                if target.is_dir():
                    continue  # its files are listed where they are
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in IGNORED_DIRS:
                    _walk(path, boundary, listing, ignored, below + "/")
                continue
            mode = entry.stat().st_mode
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symbolic link loop
            _unreadable(listing, path, exc)
            continue
        _add_file(listing, path, mode)


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


def read_capped(path: Path, max_bytes: int) -> bytes:
    """At most ``max_bytes + 1`` bytes of a regular file (one more tells that it is over the cap).

    Opened without blocking and checked on the open file, so a FIFO or a device swapped in after
    the folder was listed is refused, not waited on or read forever. Raises ValueError for those.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb", buffering=0) as handle:
        kind = kind_of_file(os.fstat(fd).st_mode)
        if kind is not None:
            raise ValueError(f"{kind}, not a regular file")
        parts, left = [], max_bytes + 1
        while left > 0 and (part := handle.read(min(left, 1 << 20))):
            parts.append(part)
            left -= len(part)
        return b"".join(parts)


def read_note(path: Path, max_bytes: int) -> NoteText:
    """A note's text, or why it cannot be indexed: too large, binary, not UTF-8, not a file."""
    try:
        data = read_capped(path, max_bytes)
    except OSError as exc:
        return NoteText(None, f"cannot read: {exc.strerror or exc}")
    except ValueError as exc:
        return NoteText(None, str(exc))
    if len(data) > max_bytes:
        size = _size(path, len(data))
        return NoteText(None, f"{size}, over the {max_bytes:,}-byte cap (CAPTAIN_MEMO_MAX_FILE_BYTES)")
    if NUL in data:
        return NoteText(None, f"binary (NUL byte at offset {data.index(NUL)})")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return NoteText(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        first = exc.start
    bad = _invalid_bytes(data)
    if bad > MAX_REPAIRED_BYTES:
        return NoteText(None, f"not UTF-8 ({bad} invalid bytes, the first at offset {first})")
    return NoteText(
        data.decode("utf-8", "replace"),
        f"repaired {bad} invalid UTF-8 byte{'s' if bad > 1 else ''} (first at offset {first})",
    )


def _size(path: Path, read: int) -> str:
    try:
        return f"{path.stat().st_size:,} bytes"
    except OSError:
        return f"over {read - 1:,} bytes"


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
